"""Tensors that share memory, saved once: PyTorch's storages in a safetensors file.

``torch.save`` stores storages, so views of one memory (a weight and its transpose, tied
weights, a state dict holding a parameter and a view of it) load still sharing it: an
in-place change of one shows in the others. Safetensors has no sharing, so ``tw.save``
stores such a group's memory once, as one file tensor, and describes each member in the
structure (:mod:`.structure`'s ``{"shared": [views, node]}`` root, format
``tensorweaver/3.2``) as ``[name, storage, shape, strides, offset]``: the elements of the
file tensor ``storage`` (in C order) at ``offset + sum(i[k] * strides[k])``. ``load`` makes
the storage tensor once and every member ``as_strided`` over it.

A group is the tensors linked to one base by views and ``detach()`` (TensorWeaver's sharing,
which follows writes both ways), at least two of them, whose base lies in memory in C order.
Each member's place in that memory comes from the layout the backend reports, and is
checked value by value against the member before the file relies on it: a member the
backend copied (NumPy's ``flip``) or whose layout it cannot tell is saved with its own
values. Complex memory is stored as its float pairs, as a complex tensor is
(:mod:`.structure`): each member is then a float view with a last dimension of 2, which
its ``complex`` node views as complex again. A view holds its own elements here, so the
views of one file may hold at most ``limits.MAX_VIEW_EXCESS`` elements more than their
storages (broadcasts): ``load`` refuses more, and ``save`` stores a member beyond that with
its own values.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NoReturn

import numpy as np

from tensorweaver.serialization.codes import stored_array
from tensorweaver.serialization.limits import MAX_RANK, MAX_VIEW_EXCESS

Fail = Callable[[str], NoReturn]
# Sizes, strides and offsets NumPy's index arithmetic (int64) holds.
_BEYOND = 2**62


def share(tensors: dict[str, Any]) -> tuple[dict[str, Any], list[list]]:
    """The file tensors for ``tensors`` (by name) with each group of memory sharers stored
    once, and the view entries that make the group's members from it ([] when none share)."""
    groups: dict[int, list[str]] = {}
    bases: dict[int, Any] = {}
    for name, t in tensors.items():
        base = _base(t)
        bases[id(base)] = base
        groups.setdefault(id(base), []).append(name)
    files = dict(tensors)
    views: list[list] = []
    budget = Budget()
    for key, names in groups.items():
        if len(names) < 2:
            continue
        entries = _entries(bases[key], {name: tensors[name] for name in names})
        if entries is None:
            continue
        # A member beyond what load lets views cost (a broadcast) keeps its own values.
        size = _flat(bases[key]).numel() * (2 if bases[key].dtype.is_complex else 1)
        entries = {n: e for n, e in entries.items() if budget.take(e[0], size)}
        names = list(entries)
        if len(names) < 2:
            continue
        storage = _storage_name(names, bases[key], tensors, files)
        for name in names:
            del files[name]
        files[storage] = _flat(bases[key]) if storage not in tensors else tensors[storage]
        views += [[name, storage, *entry] for name, entry in entries.items()]
    return files, views


def _base(t: Any) -> Any:
    """The tensor whose memory ``t`` uses, through views and ``detach()`` aliases."""
    while True:
        if t._view_of is not None:
            t = t._view_of[0]
        elif t._alias_of is not None:
            t = t._alias_of
        else:
            return t


def _storage_name(names: list[str], base: Any, tensors: dict[str, Any], files: dict) -> str:
    """The member whose values are the whole memory in C order (other tools then read that
    file tensor by its name as that member), else a new name."""
    for name in names:
        t = tensors[name]
        if t.shape == base.shape and _is_whole(t, base):
            return name
    name, n = f"{names[0]}.storage", 0
    while name in files or name in tensors:
        n += 1
        name = f"{names[0]}.storage#{n}"
    return name


def _is_whole(t: Any, base: Any) -> bool:
    return t._layout()[2] == base._layout()[2] and t.is_contiguous()


def _flat(base: Any) -> Any:
    """``base``'s elements in the order of its memory (C order, or channels-last's)."""
    order = base._dense_order()
    flat = base.detach()
    if order is not None and order != tuple(range(base.ndim)):
        flat = flat.permute(order)
    return flat.reshape(-1)


def _entries(base: Any, members: dict[str, Any]) -> dict[str, list] | None:
    """``[shape, strides, offset]`` of each member in the file tensor of ``base``'s memory
    (in memory order: C, or a permutation such as channels-last; a complex one as its float
    pairs, each member then a float view with a last dimension of 2), or None where the base
    is not one block so or a member's reported place does not hold its values."""
    if base._dense_order() is None:  # not one block (a strided view's own memory)
        return None
    base_address = base._layout()[2]
    itemsize = base.dtype.itemsize
    flat = stored_array(_flat(base))[1].reshape(-1)
    pairs = base.dtype.is_complex  # each element is two floats in the file
    entries = {}
    for name, t in members.items():
        strides, _, address = t._layout()
        step, rest = divmod(address - base_address, itemsize)
        shape, strides = list(t.shape), list(strides)
        if rest or step < 0 or t.dtype is not base.dtype or any(s < 0 for s in strides):
            return None
        if pairs:
            shape, strides, step = [*shape, 2], [*(2 * s for s in strides), 1], 2 * step
        if math.prod(shape) and step + sum((n - 1) * s for n, s in zip(shape, strides)) >= (
            flat.size
        ):
            return None
        seen = np.lib.stride_tricks.as_strided(
            flat[step:], shape, [s * flat.itemsize for s in strides], writeable=False
        )
        own = stored_array(t)[1]
        if not np.array_equal(_bits(seen), _bits(own)):
            return None
        entries[name] = [shape, strides, step]
    return entries


def _bits(a: np.ndarray) -> np.ndarray:
    """``a``'s elements as unsigned integers: equal bits, NaNs included, compare equal."""
    return a.view(f"u{a.itemsize}") if a.size else a


def parse(body: Any, names: Any, fail: Fail) -> dict[str, tuple]:
    """The view entries of a ``shared`` node, checked: each ``name: (storage, shape,
    strides, offset)``, over the file tensors ``names``."""
    if not isinstance(body, list):
        fail("the shared node's views must be a JSON list")
    views: dict[str, tuple] = {}
    for entry in body:
        if not (isinstance(entry, list) and len(entry) == 5):
            fail(f"view entry {_short(entry)} must be [name, storage, shape, strides, offset]")
        name, storage, shape, strides, offset = entry
        if not (isinstance(name, str) and isinstance(storage, str) and storage in names):
            fail(f"view entry {_short(entry)} refers to a storage the file does not hold")
        if name in views or (name in names and name != storage):
            fail(f"view {name!r} is named twice")
        if not (
            _counts(shape)
            and _counts(strides)
            and len(shape) == len(strides) <= MAX_RANK
            and type(offset) is int
            and 0 <= offset < _BEYOND
        ):
            fail(
                f"view entry {_short(entry)} must have shape, strides and offset of ints >= 0 "
                "and < 2**62"
            )
        views[name] = (storage, shape, strides, offset)
    return views


class Budget:
    """What the views of one file may cost beyond their storages' elements: a view holds
    its own elements (and ``as_strided`` indexes each dimension), so a few bytes of header
    asking for a broadcast of 10**9 x 10**9 elements over a storage of one would take the
    memory and the time of every element. ``tw.save`` keeps within it what ``tw.load``
    checks."""

    def __init__(self) -> None:
        self.left = MAX_VIEW_EXCESS

    def take(self, shape: list[int], storage: int) -> bool:
        """Spend what a view of ``shape`` over ``storage`` elements costs, if it is left."""
        excess = max(0, max(math.prod(shape), sum(shape)) - storage)
        if excess > self.left:
            return False
        self.left -= excess
        return True


def view(base: Any, name: str, entry: tuple, budget: Budget, fail: Fail) -> Any:
    """The member ``name`` made from its storage tensor ``base``, within its bounds and
    within what ``budget`` lets this file's views cost."""
    _, shape, strides, offset = entry
    last = offset + sum((n - 1) * s for n, s in zip(shape, strides))
    if math.prod(shape) and last >= base.numel():
        fail(f"view {name!r} reaches element {last} of a storage of {base.numel()} elements")
    if not budget.take(shape, base.numel()):
        fail(
            f"view {name!r} of shape {shape} over a storage of {base.numel()} elements takes "
            f"the views of this file beyond {MAX_VIEW_EXCESS} elements more than their "
            "storages hold"
        )
    return base.as_strided(shape, strides, offset)


def _counts(value: Any) -> bool:
    return isinstance(value, list) and all(type(n) is int and 0 <= n < _BEYOND for n in value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
