"""The optimizer base class: parameter groups, per-parameter state, state dicts.

Subclasses set their defaults and implement ``_update`` (one parameter, one group);
the base runs the closure, skips parameters without a gradient and runs the
updates under ``tw.no_grad()`` (recorded for autograd with ``differentiable=True``, as in
PyTorch). Complex parameters are stepped as pairs of reals (:mod:`.complex_params`).
State is keyed by the parameter object (tensors hash by identity), as in PyTorch;
``state_dict()`` keys it by the parameter's index instead; its groups are shallow copies
of the param groups (tuples stay tuples), as PyTorch's, and a JSON round trip of them
loads back (lists become tuples again).
"""

from __future__ import annotations

import contextlib
import copy
import numbers
import sys
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Iterator
from typing import Any, Callable, Optional, Union

import numpy as np

import tensorweaver as tw
from tensorweaver.ops.in_place_writes import in_order, memory_owner
from tensorweaver.optim import scalar_arrays
from tensorweaver.optim.complex_params import stepped_as_real
from tensorweaver.optim.foreach import each
from tensorweaver.optim.hooks import (
    add_hook,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
    with_step_hooks,
)
from tensorweaver.tensor import _ONE_HOLDER

# Options that every optimizer which has them requires to be >= 0, with PyTorch's words.
_NON_NEGATIVE = {
    "lr": "Invalid learning rate",
    "eps": "Invalid epsilon value",
    "weight_decay": "Invalid weight_decay value",
    "momentum": "Invalid momentum value",
    "lr_decay": "Invalid lr_decay value",
    "initial_accumulator_value": "Invalid initial_accumulator_value value",
    "momentum_decay": "Invalid momentum_decay value",
}


class _Traced(dict):
    """While tw.compile traces a step (``open``): each scalar state tensor's ``id`` ->
    ``[tensor, value, writes]``, the value a number the replay recomputes (compiler/symbolic.py
    ``lift``) or, for a tensor the step made, its number; :func:`read_scalar` reads it instead
    of the tensor, :func:`write_scalar` sets it and gives the tensor a 0-d array of its own
    holding it, listed in ``writes`` as ``(array, value)`` (the replay makes that array from
    the value: an operation on the tensor after the write reads the new value). ``quiet``
    makes the backend calls of such a write unseen by the trace."""

    open = False
    quiet: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext


TRACED = _Traced()

ParamsT = Union[Iterable[Any], Iterable[dict[str, Any]]]

__all__ = [
    "Optimizer",
    "ParamsT",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
]


class Optimizer:
    """Base class of all optimizers (``torch.optim.Optimizer``'s API).

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts
    that each define a parameter group with its own options; options a group does
    not set come from ``defaults``.
    """

    # State entries kept as 0-d tensors whose values the step reads on the host, as
    # PyTorch's steps without ``capturable`` keep and read them (see :func:`scalar_tensor`).
    _scalar_state: tuple[str, ...] = ("step",)
    # State entries kept as Python ints that each step counts up (SparseAdam's ``step``):
    # a compiled replay recomputes them, as it does floats (compiler/symbolic.py).
    _counted_state: tuple[str, ...] = ()
    # Whether complex parameters are stepped (as pairs of reals, as in PyTorch).
    _supports_complex = True
    # The options (``lr``, ``betas``) whose tensors the step reads as 0-d tensors, as
    # PyTorch's steps without ``capturable`` do: their arithmetic with the step's numbers is
    # then done in their dtype (Adam's ``lr / (1 - beta1**step)`` rounded to float32 for a
    # float32 lr). The step reads every other tensor option as a number (its value).
    _tensor_options: tuple[str, ...] = ()
    # What PyTorch's step raises (RuntimeError) for a sparse gradient (a ``sparse=True``
    # lookup's); None where it steps one: SGD, Adagrad, SparseAdam, LBFGS and, as PyTorch's
    # base class checks nothing, a user's own optimizer.
    _sparse_refusal: Optional[str] = None
    # What it raises for one with a weight_decay, where it steps sparse ones without (SGD,
    # Adagrad).
    _sparse_decay_refusal: Optional[str] = None

    # Whether the options are checked: for this package's optimizers and their subclasses;
    # PyTorch's base class checks nothing, so a user's own optimizer is not checked either.
    _checks_options = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("tensorweaver.optim."):
            cls._checks_options = True
        if "step" in cls.__dict__:  # a subclass's own step runs the step hooks too
            cls.step = with_step_hooks(cls.step)  # type: ignore[method-assign]

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        if isinstance(params, tw.Tensor):
            raise TypeError(
                f"{type(self).__name__}: params must be an iterable of tensors or of dicts, "
                "got a single Tensor; pass [tensor] or model.parameters()"
            )
        self._optimizer_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._check_group(defaults)
        self.defaults = defaults
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: optimizer got an empty parameter list")
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
        # Other keys ("name", "lr_scale", ...) stay in the group, as PyTorch keeps them.
        group = param_group  # as in PyTorch, the optimizer holds the caller's dict
        params = group["params"]
        if isinstance(params, tw.Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                f"{name}: optimizer parameters need to be organized in ordered collections, but "
                "the ordering of tensors in sets will change between runs. Please use a list "
                "instead."
            )
        params = list(params)
        if params and all(isinstance(p, tuple) for p in params):
            group["param_names"] = [p[0] for p in params]
            params = [p[1] for p in params]
        group["params"] = params
        for p in params:
            if not isinstance(p, tw.Tensor):
                raise TypeError(f"{name}: can only optimize Tensors, got {type(p).__name__}")
            if not p.is_leaf and not self.defaults.get("differentiable"):
                raise ValueError(
                    f"{name}: can't optimize a non-leaf Tensor; optimize the leaf it was "
                    "computed from, or call .detach().requires_grad_()"
                )
        for key, default in self.defaults.items():
            group.setdefault(key, default)
        self._check_group(group)

        ids = [id(p) for p in params]
        if len(set(ids)) != len(ids):  # (stepped once per listing: see _step_listed)
            warnings.warn(
                f"{name}: optimizer contains a parameter group with duplicate parameters; in "
                "future, this will cause an error (as in PyTorch); list each parameter once",
                UserWarning,
                stacklevel=3,
            )
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if seen.intersection(ids):
            raise ValueError(
                f"{name}: some parameters appear in more than one parameter group; "
                "give each parameter to one group only"
            )
        if any(("param_names" in g) != ("param_names" in group) for g in self.param_groups):
            raise ValueError(f"{name}: all param groups must be given either with names or without")
        self.param_groups.append(group)

    def _check_group(self, group: dict[str, Any]) -> None:
        """Raise ValueError for an out-of-range option; subclasses add their own rules."""
        if not self._checks_options:
            return
        name = type(self).__name__
        if group.get("fused") and group.get("foreach"):
            raise RuntimeError(f"{name}: `fused` and `foreach` cannot be `True` together.")
        for option, words in self._non_negative().items():
            if option in group:
                value = _number(name, option, group[option])
                if not value >= 0:
                    raise ValueError(f"{name}: {words}: {value} ({option} must be >= 0)")
        if "betas" in group:
            betas = group["betas"]
            if not isinstance(betas, (tuple, list)) or len(betas) != 2:
                raise ValueError(f"{name}: invalid betas={betas!r}; expected two numbers in [0, 1)")
            for i, beta in enumerate(betas):
                value = _number(name, f"betas[{i}]", beta)
                if not 0 <= value < 1:
                    raise ValueError(
                        f"{name}: Invalid beta parameter at index {i}: {value} "
                        f"(betas={tuple(betas)!r}; each must be in [0, 1))"
                    )

    def _non_negative(self) -> dict[str, str]:
        """The options this optimizer requires to be >= 0, with PyTorch's error words."""
        return _NON_NEGATIVE

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

    @with_step_hooks
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Update every parameter that has a gradient; return ``closure()``'s loss, if given."""
        loss = None
        if closure is not None:
            with tw.enable_grad():
                loss = closure()
        # As PyTorch: with differentiable=True the step is recorded for autograd.
        with tw.set_grad_enabled(bool(self.defaults.get("differentiable"))):
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                if not params:
                    continue
                if group.get("capturable") and self._checks_options:
                    _check_capturable(type(self).__name__, params)
                options = _as_numbers(group, self._tensor_options)
                refusal = self._sparse_refusal or (
                    options.get("weight_decay") and self._sparse_decay_refusal
                )
                if refusal:
                    _refuse_sparse(refusal, params)
                if _any_complex(params):
                    if not self._supports_complex:
                        raise RuntimeError(
                            f"{type(self).__name__} does not support complex parameters; "
                            "optimize their real and imaginary parts (tw.view_as_real) instead"
                        )
                    with stepped_as_real(self.state, params) as stepped:
                        self._step_listed(stepped, options)
                else:
                    self._step_listed(params, options)
        return loss

    def _step_listed(self, params: list[Any], group: dict[str, Any]) -> None:
        """Step ``params``, one of which may be listed twice (PyTorch warns of it), or whose
        gradients may share memory with what the step writes (:func:`_aliased_grads`)."""
        if len({id(p) for p in params}) != len(params):
            if group.get("foreach"):
                self._step_in_foreach_order(params, group)
            else:
                self._step_repeated(params, group)
        elif group.get("foreach") is False or not _aliased_grads(params, self.state):
            self._step_group(params, group)
        elif group.get("foreach"):
            self._step_in_foreach_order(params, group)
        else:  # PyTorch's default on a CPU: its single-tensor loop, one parameter at a time
            self._step_group(params, {**group, "foreach": False})

    def _step_in_foreach_order(self, params: list[Any], group: dict[str, Any]) -> None:
        """Step ``params`` in the order of PyTorch's ``foreach=True`` step, where it shows (a
        gradient sharing memory with what the step writes, a parameter listed twice): each
        list operation over every parameter before the next, and each over the parameters
        one after another, reading the tensors as they are then. Here: ``_step_group`` with
        foreach_update's ``in_order``; optimizers whose ``_step_group`` is not PyTorch's
        foreach order override this."""
        with in_order(lambda: _step_tensors(params, self.state)):
            self._step_group(params, group)

    def _step_repeated(self, params: list[Any], group: dict[str, Any]) -> None:
        """Step ``params``, some listed more than once: once per listing, one after the other,
        as PyTorch's per-parameter loop does (a grouped step would read every listing's state
        before writing any)."""
        for p in params:
            self._step_group([p], group)

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
                grad = grad.add(param, alpha=weight_decay)  # (PyTorch's: one rounding)
        return grad

    @staticmethod
    def _foreach_grads(params: list[Any], group: dict[str, Any], decoupled: bool = False) -> list:
        """:meth:`_grad` of each of ``params`` as PyTorch's foreach steps make them: all
        negated (``maximize``), then the weight decay of all (decoupled: every parameter
        scaled, in place); not to be modified in place."""
        grads = [p.grad for p in params]
        if group["maximize"]:
            grads = [-g for g in grads]
        weight_decay = group["weight_decay"]
        if weight_decay != 0:
            if decoupled:
                each("mul_", params, 1 - group["lr"] * weight_decay)
            else:
                grads = [g.add(p, alpha=weight_decay) for g, p in zip(grads, params)]
        return grads

    # -- state dicts --------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state: ``{"state": {index: {...}}, "param_groups": [...]}``.

        Parameters are named by their index in the order of ``param_groups``; the
        tensors are the live state tensors (not copies), as in PyTorch.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        # As PyTorch numbers them: by position over all groups; a parameter listed twice
        # takes its last position in the first group that lists it.
        index: dict[int, int] = {}
        groups = []
        start = 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            positions = {id(p): i for i, p in enumerate(group["params"], start)}
            for key, position in positions.items():
                index.setdefault(key, position)
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(group["params"])
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items()}
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a dict from ``state_dict()``: its state tensors, as PyTorch, are kept (shared)
        where they already have each parameter's device and, the parameter floating, its
        dtype, else moved or cast (see :meth:`_load_value`); keys may be ints or their
        string form (as after a JSON round trip).
        """
        name = type(self).__name__
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"{name}.load_state_dict: loaded state dict has a different number of parameter "
                f"groups ({len(saved_groups)} param groups; the optimizer has "
                f"{len(self.param_groups)})"
            )
        for i, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(
                    f"{name}.load_state_dict: loaded state dict contains a parameter group that "
                    "doesn't match the size of optimizer's group (param group "
                    f"{i} has {len(saved['params'])} parameters in the state dict and "
                    f"{len(group['params'])} in the optimizer)"
                )
        by_index = {
            int(i): (p, saved)
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
            param, saved = by_index[int(key)]
            state[param] = {k: self._load_value(param, k, v, saved) for k, v in saved_state.items()}

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
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # -- hooks ----------------------------------------------------------------------------

    def register_step_pre_hook(self, hook: Callable) -> Any:
        """Call ``hook(optimizer, args, kwargs)`` before each ``step``; it may return new
        ``(args, kwargs)``."""
        return add_hook(self._optimizer_step_pre_hooks, hook, prepend=False)

    def register_step_post_hook(self, hook: Callable) -> Any:
        """Call ``hook(optimizer, args, kwargs)`` after each ``step``."""
        return add_hook(self._optimizer_step_post_hooks, hook, prepend=False)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> Any:
        """Call ``hook(optimizer)`` before ``state_dict()`` builds the dict."""
        return add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> Any:
        """Call ``hook(optimizer, state_dict)`` on the dict; a dict it returns replaces it."""
        return add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> Any:
        """Call ``hook(optimizer, state_dict)`` before loading; a dict it returns is loaded."""
        return add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> Any:
        """Call ``hook(optimizer)`` after ``load_state_dict`` has loaded."""
        return add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def _load_value(self, param: Any, key: str, value: Any, group: dict[str, Any]) -> Any:
        """State entry ``key`` of ``param`` (in the saved ``group``) as PyTorch loads it: a
        tensor moved to the param's device (and dtype, where the param is floating), the
        very tensor where nothing changes; ``step`` kept as it is, but float32 on the
        param's device in a capturable or fused group."""
        if isinstance(value, list):  # LBFGS keeps its history as lists of tensors
            return [self._load_value(param, key, v, group) for v in value]
        if not isinstance(value, tw.Tensor):
            if key in self._scalar_state and isinstance(value, numbers.Real):
                return scalar_tensor(float(value))  # (a checkpoint that kept a number)
            return copy.deepcopy(value)
        if key == "step":
            if group.get("capturable") or group.get("fused"):
                return value.to(dtype=tw.float32, device=param.device)
            return value
        if param.dtype.is_floating_point:
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(param.device)

    def __repr__(self) -> str:
        # As PyTorch: a blank line before every group after the first.
        groups = []
        for i, group in enumerate(self.param_groups):
            lines = [f"Parameter Group {i}"]
            lines += [f"    {k}: {group[k]}" for k in sorted(group) if k != "params"]
            groups.append("\n".join(lines))
        return f"{type(self).__name__} (\n" + "\n\n".join(groups) + "\n)"


def _number(owner: str, option: str, value: Any) -> float:
    """An option's value as a number: a real number, or a one-element tensor's value."""
    if isinstance(value, tw.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{owner}: Tensor {option} must be 1-element, got shape {value.shape}")
        return value.item()
    if not isinstance(value, numbers.Real):
        raise TypeError(
            f"{owner}: {option} must be a number or a 1-element tensor, got "
            f"{type(value).__name__} {value!r}"
        )
    return value


def _as_numbers(group: dict[str, Any], kept: tuple[str, ...] = ()) -> dict[str, Any]:
    """``group``, or a copy whose tensor options (an lr or betas given as tensors) are
    Python numbers: their values, as PyTorch's steps without ``capturable`` read them; but
    those of the options ``kept`` stay tensors (0-d, as PyTorch's ``_to_scalar`` makes)."""
    for value in group.values():  # a plain loop: this runs every step
        if isinstance(value, tw.Tensor) or (
            type(value) in (tuple, list) and any(isinstance(x, tw.Tensor) for x in value)
        ):
            break
    else:
        return group

    def _read(key: str, value: Any) -> Any:
        if key == "params":
            return value
        read = _kept if key in kept else _value
        if isinstance(value, tw.Tensor):
            return read(value)
        if type(value) in (tuple, list):
            return type(value)(read(x) for x in value)
        return value

    return {k: _read(k, v) for k, v in group.items()}


def _kept(value: Any) -> Any:
    """A tensor option as PyTorch's step reads it (``_to_scalar``): 0-d."""
    return value.squeeze() if isinstance(value, tw.Tensor) and value.dim() else value


def _check_capturable(owner: str, params: list[Any]) -> None:
    """PyTorch's AssertionError for ``capturable=True`` (a step for CUDA graphs, its state
    kept on the device) with parameters on a CPU device."""
    for p in params:
        if p.device.type == "cpu":
            raise AssertionError(
                f"{owner}: If capturable=True, params and state_steps must be on supported "
                f"devices: ['cuda', 'xpu', 'hpu', 'privateuseone', 'xla'] (got {p.device}); "
                "pass capturable=False on a CPU device"
            )


def _refuse_sparse(refusal: str, params: list[Any]) -> None:
    """Raise ``refusal`` (PyTorch's RuntimeError) where a gradient of ``params`` is sparse."""
    for p in params:  # (a plain loop over ``_grad``, which each has here: this runs every step)
        if p._grad.is_sparse:
            raise RuntimeError(refusal)


def _aliased_grads(params: list[Any], state: dict[Any, dict[str, Any]]) -> bool:
    """Whether a gradient of ``params`` shares its array or memory (a view's) with a
    parameter, a state tensor or another gradient (``q.grad = p.data``, ``p.grad = buf``,
    ``q.grad = p.data.t()``; not the real view of a complex gradient): then stepping
    all at once, each update reading the arrays as they were before any, is not PyTorch's
    step, whose updates read what the updates before them wrote."""
    for p in params:  # (a gradient and its array that one attribute each holds: no test more)
        if (
            sys.getrefcount(p._grad) > _ONE_HOLDER
            or sys.getrefcount(p._grad.native) > _ONE_HOLDER
            or p._grad._view_of is not None
        ):
            return _shares_memory(params, state)
    return False


def _shares_memory(params: list[Any], state: dict[Any, dict[str, Any]]) -> bool:
    """:func:`_aliased_grads`'s answer, comparing whose memory each tensor is (a clone shares
    its source's array, not its memory: the two change apart)."""
    grads, owners = set(), set()
    for p in params:
        if id(p._grad) in grads:
            return True
        grads.add(id(p._grad))
        owners.add(id(memory_owner(p._grad)))
    tensor = tw.Tensor
    for p in params:  # (plain loops, no set of the written tensors: this may run every step)
        if id(memory_owner(p)) in owners:
            return True
        entries = state.get(p)
        if entries:
            for t in entries.values():
                if isinstance(t, tensor) and id(memory_owner(t)) in owners:
                    return True
    return False


def _step_tensors(params: list[Any], state: dict[Any, dict[str, Any]]) -> Iterator[Any]:
    """The tensors a step of ``params`` reads or writes: the parameters, their gradients and
    their state tensors."""
    tensor = tw.Tensor
    for p in params:
        yield p
        yield p._grad
        entries = state.get(p)
        if entries:
            yield from (value for value in entries.values() if isinstance(value, tensor))


def _any_complex(params: list[Any]) -> bool:
    for p in params:  # a plain loop: this runs every step
        if p.dtype.kind == "c":
            return True
    return False


def scalar_state(value: float, entry: Any) -> float:
    """``value`` as the scalar state ``entry`` (NAdam's mu_product, ASGD's eta and mu) holds
    it: rounded to float32 for a float32 tensor (a number: unless the default dtype is
    float64), as PyTorch computes with it."""
    dtype = entry.dtype if isinstance(entry, tw.Tensor) else tw.get_default_dtype()
    return value if dtype is tw.float64 else as_float32(value)


def as_float32(value: float) -> float:
    """``value`` rounded to float32. A number that tw.compile's trace recomputes
    (compiler/symbolic.py's ``Sym``) stays one, whose replay rounds the recomputed value."""
    if type(value) is not float and hasattr(value, "as_float32"):
        return value.as_float32()
    return float(np.float32(value))


def host_max(a: float, b: float) -> float:
    """``max(a, b)``. A number that tw.compile's trace recomputes (compiler/symbolic.py's
    ``Sym``) gives one whose replay takes the max afresh, rather than a guard on which was
    larger (ASGD's ``max(1, step - t0)`` changes sides once, at step ``t0 + 1``)."""
    for x, y in ((b, a), (a, b)):
        if isinstance(x, float) and type(x) is not float and hasattr(x, "maximum"):
            return x.maximum(y, first=x is a)
    return max(a, b)


def scalar_tensor(value: float) -> Any:
    """A new scalar state entry (``step``, NAdam's ``mu_product``, ...): a 0-d tensor of
    PyTorch's scalar dtype (float32, float64 when that is the default dtype)."""
    dtype = tw.float64 if tw.get_default_dtype() is tw.float64 else tw.float32
    tensor = tw.tensor(value, dtype=dtype)
    if TRACED.open:  # (a read of it would break the graph; its value is known, as stored)
        TRACED[id(tensor)] = [tensor, value if dtype is tw.float64 else as_float32(value), []]
    return tensor


def read_scalar(value: Any) -> float:
    """A scalar state entry's value on the host (PyTorch's ``_get_value``). While
    ``tw.compile`` traces, it is a number the replay recomputes (compiler/symbolic.py)."""
    if not isinstance(value, tw.Tensor):
        return value
    traced = TRACED.get(id(value)) if TRACED else None
    return scalar_arrays.get(value) if traced is None else traced[1]


def write_scalar(state: dict[str, Any], key: str, value: float) -> float:
    """Store ``value`` in the scalar state entry ``state[key]`` (in place: the tensor a
    state dict or a checkpoint holds sees it, as in PyTorch); return ``value``."""
    entry = state[key]
    if isinstance(entry, tw.Tensor):
        traced = TRACED.get(id(entry)) if TRACED else None
        if traced is not None:  # tw.compile is tracing: the replay recomputes ``value``
            traced[1] = value
            with TRACED.quiet():
                array = entry.backend.full((), float(value), entry.dtype)
                entry._take(array)
            traced[2].append((array, value))
        elif entry.requires_grad:
            entry.fill_(value)
        elif entry.ndim == 0:  # fill_'s effect, without its per-op cost (a tenth of it)
            scalar_arrays.put(entry, value)
        else:
            entry._take(entry.backend.full(entry.shape, value, entry.dtype))
    else:
        state[key] = value
    return value


def count_step(state: dict[str, Any]) -> float:
    """Add one to ``state["step"]``; return the new count as a Python number."""
    return write_scalar(state, "step", read_scalar(state["step"]) + 1)


def count_steps(states: list[dict[str, Any]]) -> list[float]:
    """:func:`count_step` of each of ``states``; the counts after all, as PyTorch's foreach
    steps read them (a parameter listed twice counts twice, and reads the second count)."""
    counts = {}
    for state in states:
        counts[id(state)] = count_step(state)
    return [counts[id(state)] for state in states]


def _value(value: Any) -> Any:
    return value.item() if isinstance(value, tw.Tensor) else value
