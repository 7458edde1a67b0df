"""``vmap``'s guard against writes into tensors that are not mapped over.

``vmap`` here calls the function once per batch element, so an in-place write into a
tensor shared by every element (an input with ``in_dims=None``, a keyword argument, a
tensor, or a module's parameter or buffer, that the function reaches through its closure,
its globals, a ``functools.partial``'s arguments or a bound method's object) would happen
once per element, where PyTorch's single batched call writes once (or raises, when the
written value differs per element). Such a write raises instead of giving a silently
different result: after the first element's call (so that one write at most has
happened) and after the last.
"""

from __future__ import annotations

import functools
from typing import Callable

from tensorweaver.func._pytree import tree_flatten
from tensorweaver.nn.modules.module import Module
from tensorweaver.tensor import Tensor

#: PyTorch's error for a batch norm that would update unbatched running statistics.
_BATCH_NORM_MESSAGE = (
    "Batch norm got a batched tensor as input while the running_mean or running_var, which "
    "will be updated in place, were not batched.\nIf you are using a module and do not need "
    "eval mode, please set `track_running_stats` to be False.If you are using a prebuilt "
    "module and do not need eval mode, please see the functorch website for resources on how "
    "to patch your module to work with vmap"
)


def _reachable(func: Callable) -> list:
    """What ``func`` reaches: itself (a module), a bound method's object, a
    ``functools.partial``'s arguments, the cells it closes over and the globals it names."""
    if isinstance(func, Module):
        return [func]
    found: list = [func, getattr(func, "__self__", None)]
    while isinstance(func, functools.partial):
        found += tree_flatten((func.args, func.keywords))[0]
        func = func.func
        found.append(func)
    for cell in getattr(func, "__closure__", None) or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:  # a cell not yet bound
            continue
    code, names = getattr(func, "__code__", None), getattr(func, "__globals__", None)
    if code is not None and names is not None:
        # co_names also lists attribute names: a tensor found by such a name is watched
        # too, harmlessly (any unmapped tensor written during the calls is a repeated write)
        found += [names[n] for n in code.co_names if n in names]
    return found


def _tensors(values: list) -> list:
    """The tensors among ``values``, with the parameters and buffers of the modules (a
    batch norm's running statistics, say); None where a module has a None entry."""
    out = [v for v in values if isinstance(v, Tensor)]
    modules = [v for v in values if isinstance(v, Module)]
    seen: set[int] = set()
    while modules:  # the modules' own dicts: named_parameters() builds names, twice the time
        module = modules.pop()
        if module is None or id(module) in seen:
            continue
        seen.add(id(module))
        out += module._parameters.values()
        out += module._buffers.values()
        modules += module._modules.values()
    return out


def _lineage(tensors: list) -> set[int]:
    """The ids of ``tensors`` and of the tensors whose memory they view or alias
    (transitively)."""
    ids: set[int] = set()
    stack = list(tensors)
    while stack:
        t = stack.pop()
        if id(t) in ids:
            continue
        ids.add(id(t))
        if t._view_of is not None:
            stack.append(t._view_of[0])
        if t._alias_of is not None:
            stack.append(t._alias_of)
    return ids


def _batch_norm_statistic(roots: list, written: list) -> bool:
    """Whether one of ``written`` is a running mean or variance of a module among (or
    under) ``roots``."""
    ids = {id(x) for x in written}
    modules = [v for v in roots if isinstance(v, Module)]
    for module in modules:
        for sub in module.modules():
            stats = (sub._buffers.get("running_mean"), sub._buffers.get("running_var"))
            if any(id(s) in ids for s in stats if s is not None):
                return True
    return False


class UnbatchedWrites:
    """The versions of the tensors every batch element shares, checked after the calls."""

    __slots__ = ("func", "roots", "watched")

    def __init__(self, func: Callable, shared: list, mapped: list, kwargs: dict) -> None:
        self.func = func
        self.roots = _reachable(func) + shared
        if kwargs:
            self.roots += tree_flatten(kwargs)[0]
        candidates = _tensors(self.roots)
        # a write into a mapped input reaches the memory it views and the other views of
        # that memory: no repeated write
        mapped_ids = _lineage(mapped) if candidates else set()
        self.watched = [
            (x, x._version)
            for x in candidates
            if x is not None
            and id(x) not in mapped_ids
            and (x._view_of is None and x._alias_of is None or mapped_ids.isdisjoint(_lineage([x])))
        ]

    def check(self) -> None:
        """PyTorch's RuntimeError if the calls wrote into a shared tensor."""
        written = [x for x, version in self.watched if x._version != version]
        if not written:
            return
        if _batch_norm_statistic(self.roots, written):
            raise RuntimeError(_BATCH_NORM_MESSAGE)
        name = getattr(self.func, "__name__", repr(self.func))
        raise RuntimeError(
            f"vmap({name}, ...): `{name}` wrote in place into a tensor of shape "
            f"{list(written[0].shape)} that is not mapped over (an input with in_dims=None, a "
            "keyword argument or a tensor it closes over). vmap runs the function once per "
            "batch element here, so the write would repeat: write into a mapped input, or "
            "return the new value and write it outside vmap"
        )
