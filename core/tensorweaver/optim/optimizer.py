"""The optimizer base class: parameter groups, per-parameter state, state dicts.

Subclasses set their defaults and implement ``_update`` (one parameter, one group);
the base runs the closure, skips parameters without a gradient and runs the
updates under ``tw.no_grad()``. State is keyed by the parameter object (tensors
hash by identity), as in PyTorch; ``state_dict()`` keys it by the parameter's
index instead and holds only tensors, numbers, strings, booleans, None, lists and dicts,
so it can be written as safetensors plus JSON.
"""

from __future__ import annotations

import copy
import numbers
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Callable, Optional, Union

import tensorweaver as tw

# Options that every optimizer which has them requires to be a number >= 0.
_NON_NEGATIVE = (
    "lr",
    "eps",
    "weight_decay",
    "momentum",
    "alpha",
    "lr_decay",
    "initial_accumulator_value",
    "momentum_decay",
)

ParamsT = Union[Iterable[Any], Iterable[dict[str, Any]]]


class Optimizer:
    """Base class of all optimizers (``torch.optim.Optimizer``'s API).

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts
    that each define a parameter group with its own options; options a group does
    not set come from ``defaults``.
    """

    # State entries kept as Python numbers (a tensor loaded into one becomes a float).
    _scalar_state: tuple[str, ...] = ("step",)

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        if isinstance(params, tw.Tensor):
            raise TypeError(
                f"{type(self).__name__}: params must be an iterable of tensors or of dicts, "
                "got a single Tensor; pass [tensor] or model.parameters()"
            )
        self._check_group(defaults)
        self.defaults = defaults
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # -- parameter groups -------------------------------------------------------------

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (others from ``defaults``)."""
        name = type(self).__name__
        if not isinstance(param_group, dict):
            raise TypeError(f"{name}: a param group must be a dict, got {type(param_group)}")
        unknown = sorted(set(param_group) - set(self.defaults) - {"params", "param_names"})
        if unknown:
            raise ValueError(
                f"{name}: unknown param group option(s) {unknown}; "
                f"known options are {sorted(self.defaults)}"
            )
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, tw.Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                f"{name}: params must be an ordered collection (a set's order changes between "
                "runs); pass a list"
            )
        params = list(params)
        if params and all(isinstance(p, tuple) for p in params):
            group["param_names"] = [p[0] for p in params]
            params = [p[1] for p in params]
        group["params"] = params
        for p in params:
            if not isinstance(p, tw.Tensor):
                raise TypeError(f"{name}: can only optimize Tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(
                    f"{name}: can't optimize a non-leaf Tensor; optimize the leaf it was "
                    "computed from, or call .detach().requires_grad_()"
                )
        for key, default in self.defaults.items():
            group.setdefault(key, default)
        self._check_group(group)

        ids = [id(p) for p in params]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{name}: a parameter appears twice in one param group")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if seen.intersection(ids):
            raise ValueError(f"{name}: some parameters appear in more than one param group")
        if any(("param_names" in g) != ("param_names" in group) for g in self.param_groups):
            raise ValueError(f"{name}: all param groups must be given either with names or without")
        self.param_groups.append(group)

    def _check_group(self, group: dict[str, Any]) -> None:
        """Raise ValueError for an out-of-range option; subclasses add their own rules."""
        name = type(self).__name__
        if group.get("differentiable"):
            raise NotImplementedError(
                f"{name}: differentiable=True (autograd through the optimizer step) is not "
                "supported; steps run under tw.no_grad(). Pass differentiable=False"
            )
        for option in _NON_NEGATIVE:
            if option in group:
                value = group[option]
                if not isinstance(value, numbers.Real) or not value >= 0:
                    raise ValueError(f"{name}: invalid {option}={value!r}; expected a number >= 0")
        if "betas" in group:
            betas = group["betas"]
            if (
                not isinstance(betas, (tuple, list))
                or len(betas) != 2
                or not all(isinstance(b, numbers.Real) and 0 <= b < 1 for b in betas)
            ):
                raise ValueError(f"{name}: invalid betas={betas!r}; expected two numbers in [0, 1)")

    # -- stepping ---------------------------------------------------------------------

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to ``None``, or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.requires_grad:
                        p.grad = p.grad.detach()
                    p.grad.zero_()

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Update every parameter that has a gradient; return ``closure()``'s loss, if given."""
        loss = None
        if closure is not None:
            with tw.enable_grad():
                loss = closure()
        with tw.no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                if params:
                    self._step_group(params, group)
        return loss

    def _step_group(self, params: list[Any], group: dict[str, Any]) -> None:
        """Step ``params`` (those of ``group`` with a gradient); optimizers with a foreach
        path (several tensors per backend call) override it."""
        for p in params:
            self._update(p, group)

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        """Apply one step to ``param`` (which has a gradient) with ``group``'s options."""
        raise NotImplementedError

    def _init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        """The state a parameter starts with (subclasses that keep state define it)."""
        raise NotImplementedError

    def _state_of(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        """``param``'s state, created by ``_init_state`` on first use."""
        state = self.state[param]
        if not state:
            state.update(self._init_state(param, group))
        return state

    @staticmethod
    def _grad(param: Any, group: dict[str, Any], decoupled: bool = False) -> Any:
        """The gradient to descend: negated if ``maximize``, plus weight decay.

        Weight decay is L2 (added to the gradient) or, with ``decoupled``, applied to
        the parameter directly (AdamW's rule). The result may be ``param.grad`` itself,
        so callers must not modify it in place.
        """
        grad = -param.grad if group["maximize"] else param.grad
        weight_decay = group["weight_decay"]
        if weight_decay != 0:
            if decoupled:
                param.mul_(1 - group["lr"] * weight_decay)
            else:
                grad = grad + param * weight_decay
        return grad

    # -- state dicts --------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state: ``{"state": {index: {...}}, "param_groups": [...]}``.

        Parameters are named by their index in the order of ``param_groups``; the
        tensors are the live state tensors (not copies), as in PyTorch.
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: _plain(v) for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a dict from ``state_dict()``; its tensors are copied to each parameter.

        Floating-point state tensors take the parameter's device and dtype; keys may
        be ints or their string form (as after a JSON round trip).
        """
        name = type(self).__name__
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"{name}.load_state_dict: the state dict has {len(saved_groups)} param groups, "
                f"the optimizer has {len(self.param_groups)}"
            )
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    f"{name}.load_state_dict: param group {i} has {len(saved['params'])} "
                    f"parameters in the state dict and {len(group['params'])} in the optimizer"
                )
        by_index = {
            int(i): p
            for group, saved in zip(self.param_groups, saved_groups)
            for i, p in zip(saved["params"], group["params"])
        }
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for key, saved_state in state_dict["state"].items():
            if int(key) not in by_index:
                raise ValueError(
                    f"{name}.load_state_dict: state for parameter index {key}, which no "
                    "param group of the state dict lists"
                )
            param = by_index[int(key)]
            state[param] = {k: self._load_value(param, k, v) for k, v in saved_state.items()}

        groups = []
        for group, saved in zip(self.param_groups, saved_groups):
            for key, value in saved.items():
                # JSON has no tuples: restore the type the optimizer uses (betas).
                if isinstance(value, list) and isinstance(group.get(key), tuple):
                    saved[key] = tuple(value)
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            groups.append(saved)
        self.state = state
        self.param_groups = groups

    def _load_value(self, param: Any, key: str, value: Any) -> Any:
        if isinstance(value, list):  # LBFGS keeps its history as lists of tensors
            return [self._load_value(param, key, v) for v in value]
        if not isinstance(value, tw.Tensor):
            return copy.deepcopy(value)
        if key in self._scalar_state:
            return float(value.item())
        value = value.to(param.device)
        if value.dtype.is_floating_point and param.dtype.is_floating_point:
            value = value.to(param.dtype)
        return value.clone()

    def __repr__(self) -> str:
        # As PyTorch: a blank line before every group after the first.
        groups = []
        for i, group in enumerate(self.param_groups):
            lines = [f"Parameter Group {i}"]
            lines += [f"    {k}: {group[k]}" for k in sorted(group) if k != "params"]
            groups.append("\n".join(lines))
        return f"{type(self).__name__} (\n" + "\n\n".join(groups) + "\n)"


def _plain(value: Any) -> Any:
    """A copy of a group option made of lists and dicts only (tuples become lists)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
