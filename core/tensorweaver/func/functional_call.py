"""``torch.func``'s ``functional_call`` and ``stack_module_state``: calling a module with
other tensors in place of its parameters and buffers (they are swapped in for the call and
back afterwards, so the result is differentiable in the tensors passed), and stacking the
state of several like modules for ``vmap`` (model ensembling).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

from tensorweaver.nn.modules.module import Module
from tensorweaver.ops.movement import stack
from tensorweaver.tensor import Tensor

__all__ = ["functional_call", "stack_module_state"]


def _owner(module: Module, name: str) -> tuple[Module, str]:
    *path, leaf = name.split(".")
    for part in path:
        module = getattr(module, part)
    return module, leaf


def _with_tied_names(
    module: Module, given: Mapping[str, Tensor], tie_weights: bool
) -> dict[str, Tensor]:
    """``given``, plus every other name of a tensor one of its names was given for."""
    names_of: dict[int, list[str]] = {}
    named = [
        *module.named_parameters(remove_duplicate=False),
        *module.named_buffers(remove_duplicate=False),
    ]
    for name, tensor in named:
        names_of.setdefault(id(tensor), []).append(name)
    out = dict(given)
    if not tie_weights:
        return out
    for names in names_of.values():
        values = {id(given[n]): given[n] for n in names if n in given}
        if len(values) > 1:
            raise ValueError(
                f"functional_call got different values for the tied tensors {names}; pass one "
                "value for all of them, or tie_weights=False"
            )
        for value in values.values():
            out.update(dict.fromkeys(names, value))
    return out


@contextlib.contextmanager
def _reparametrized(
    module: Module, given: Mapping[str, Tensor], tie_weights: bool, strict: bool
) -> Iterator[None]:
    values = _with_tied_names(module, given, tie_weights)
    if strict:
        known = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        known |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        # PyTorch's text: sorted quoted names, unexpected ones first, each line if any
        lines = [
            f"{what} key(s): {', '.join(map(repr, sorted(names)))}."
            for what, names in (
                ("Unexpected", set(values) - known),
                ("Missing", known - set(values)),
            )
            if names
        ]
        if lines:
            raise RuntimeError(
                f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(lines)
            )
    swapped: list[tuple[dict, str, Any]] = []
    added: list[tuple[Module, str]] = []
    try:
        for name, value in values.items():
            owner, leaf = _owner(module, name)
            store = next((s for s in (owner._parameters, owner._buffers) if leaf in s), None)
            if store is None:  # not a parameter or buffer: a plain attribute for the call
                object.__setattr__(owner, leaf, value)
                added.append((owner, leaf))
            else:  # written into the store: a plain tensor may stand in for a Parameter
                swapped.append((store, leaf, store[leaf]))
                store[leaf] = value
        yield
    finally:
        for store, leaf, old in reversed(swapped):
            store[leaf] = old
        for owner, leaf in added:
            object.__delattr__(owner, leaf)


def _merged(parameter_and_buffer_dicts: Any) -> Mapping[str, Tensor]:
    """One mapping from a dict, or from a sequence of dicts with no name in two of them."""
    if isinstance(parameter_and_buffer_dicts, dict):
        return parameter_and_buffer_dicts
    if not isinstance(parameter_and_buffer_dicts, Sequence):
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but "
            f"got {type(parameter_and_buffer_dicts)}"
        )
    if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
        raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    counts: dict[str, int] = {}
    for d in parameter_and_buffer_dicts:
        for k in d:
            counts[k] = counts.get(k, 0) + 1
    repeated = [k for k, n in counts.items() if n > 1]
    if repeated:
        raise ValueError(
            f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
            "ambiguous"
        )
    return {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: Any,
    args: Any = None,
    kwargs: Optional[dict[str, Any]] = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts`` (a
    dict by qualified name, or a sequence of such dicts) in place of the module's own
    (tied tensors follow a given name unless ``tie_weights=False``; ``strict`` requires
    exactly every name)."""
    given = _merged(parameter_and_buffer_dicts)
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrized(module, given, tie_weights, strict):
        return module(*args, **kwargs)


def _stacked_leaf(tensors: list[Tensor], name: str) -> Tensor:
    """The tensors stacked as a new leaf, requiring grad if they all do."""
    grads = {t.requires_grad for t in tensors}
    if len(grads) > 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack([t.detach() for t in tensors])
    return result.requires_grad_() if grads == {True} else result


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The parameters and the buffers of ``models`` (modules of one class, in one mode),
    each stacked along a new first dimension, by name: new leaves, for ``vmap`` over
    ``functional_call`` of one of them."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers
