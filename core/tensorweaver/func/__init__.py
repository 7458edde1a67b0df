"""``tw.func``: PyTorch's ``torch.func`` namespace; so far ``functional_call``, calling a
module with other tensors in place of its parameters and buffers: the module's own tensors
are swapped out for the call and back afterwards, so the result is differentiable in the
tensors passed (meta-learning, per-sample gradients).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any, Optional

from tensorweaver.nn.modules.module import Module
from tensorweaver.tensor import Tensor

__all__ = ["functional_call"]


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
        known = [n for n, _ in module.named_parameters(remove_duplicate=False)]
        known += [n for n, _ in module.named_buffers(remove_duplicate=False)]
        missing = [n for n in known if n not in values]
        unexpected = [n for n in values if n not in known]
        if missing or unexpected:
            raise RuntimeError(
                f"Error(s) in reparametrizing for {type(module).__name__}:\n"
                f"\tMissing key(s): {missing}.\n\tUnexpected key(s): {unexpected}."
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


def functional_call(
    module: Module,
    parameters_and_buffers: Mapping[str, Tensor],
    args: Any = None,
    kwargs: Optional[dict[str, Any]] = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """``module(*args, **kwargs)`` with ``parameters_and_buffers`` (by qualified name) in
    place of the module's own tensors (tied tensors follow a given name unless
    ``tie_weights=False``; ``strict`` requires exactly every name)."""
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrized(module, parameters_and_buffers, tie_weights, strict):
        return module(*args, **kwargs)
