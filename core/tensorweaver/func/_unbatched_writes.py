"""``vmap``'s guard against writes into tensors that are not mapped over.

``vmap`` here calls the function once per batch element, so an in-place write into a
tensor shared by every element (an input with ``in_dims=None``, a keyword argument, a
tensor, or a module's parameter or buffer, that the function closes over) would happen
once per element, where PyTorch's single batched call writes once (or raises, when the
written value differs per element). Such a write raises instead of giving a silently
different result.
"""

from __future__ import annotations

from typing import Callable

from tensorweaver.func._pytree import tree_flatten
from tensorweaver.nn.modules.module import Module
from tensorweaver.tensor import Tensor


def _closed_over(func: Callable) -> list:
    """What ``func`` (or the function a ``functools.partial`` wraps) closes over, with a
    partial's bound arguments, and ``func`` itself (a module)."""
    found: list = [func]
    while hasattr(func, "func") and hasattr(func, "args"):  # functools.partial
        found += tree_flatten((func.args, func.keywords))[0]
        func = func.func
    cells = getattr(func, "__closure__", None) or ()
    for cell in cells:
        try:
            found.append(cell.cell_contents)
        except ValueError:  # a cell not yet bound
            continue
    return found


def _tensors(values: list) -> list:
    """The tensors among ``values``, with the parameters and buffers of the modules (a
    batch norm's running statistics, say)."""
    out: list = []
    stack = list(values)
    seen: set[int] = set()
    while stack:  # the tree's own dicts: parameters() + buffers() build names, twice the time
        v = stack.pop()
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, Module) and id(v) not in seen:
            seen.add(id(v))
            stack += v._parameters.values()
            stack += v._buffers.values()
            stack += v._modules.values()
    return out


class UnbatchedWrites:
    """The versions of the tensors every batch element shares, checked after the calls."""

    def __init__(self, func: Callable, shared: list, mapped: list, kwargs: dict) -> None:
        self.func = func
        candidates = _tensors(shared + tree_flatten(kwargs)[0] + _closed_over(func))
        mapped_ids = {id(x) for x in mapped}
        self.watched = {id(x): x for x in candidates if id(x) not in mapped_ids}
        self.versions = {k: x._version for k, x in self.watched.items()}

    def check(self) -> None:
        """PyTorch's RuntimeError if the calls wrote into a shared tensor."""
        for k, x in self.watched.items():
            if x._version != self.versions[k]:
                name = getattr(self.func, "__name__", repr(self.func))
                raise RuntimeError(
                    f"vmap({name}, ...): `{name}` wrote in place into a tensor of shape "
                    f"{list(x.shape)} that is not mapped over (an input with in_dims=None, a "
                    "keyword argument or a tensor it closes over). vmap runs the function once "
                    "per batch element here, so the write would repeat: write into a mapped "
                    "input, or return the new value and write it outside vmap"
                )
