"""Strides, storage offsets and storages of cuPyNumeric arrays (the optional ``layout``,
``storage`` and ``contiguous`` of :data:`tensorweaver.contract.ir.OPTIONAL`).

A cuPyNumeric array is a Legate store: an index space over a storage that Legate places in
memory itself (split over processors, copied between memories, each piece laid out as its
mapper chooses). Its ``.strides`` are those of the NumPy array that materialising it on the
host would give, and reading them (or ``.flags``, or an address) copies the array there and
waits for every pending task. So the layout here is kept beside the arrays instead, without
asking Legate: a new array is row-major at offset 0 over a storage of its own, and each view
that the four view primitives (``reshape``, ``permute``, ``expand``, ``slice``) return is
placed in its input's storage as PyTorch's view op places it. Where Legate views too
(transpose, broadcast, basic slices) these are the strides ``.strides`` reports (the tests
compare them); where it copies (every reshape, stepped slices) they are the strides of the
view PyTorch makes, which the core keeps in step with its base as it does every view (it
never writes into a cuPyNumeric array's memory). A reshape that PyTorch cannot view is a new
storage, so the core treats it as PyTorch's copy. An elementwise result is a new storage
laid out in its operands' axis order, as PyTorch's (:meth:`Layouts._follow_layouts`).

``storage`` stands here without ``wrap_host``/``host_view``/``write_into`` (nothing shares
host memory): the core reads it beside ``layout`` to tell a view that holds its base's
memory from one holding a copy (``as_strided``, ``diagonal``) and a reshape from a copy.

There is no address: a storage has none until a task maps it, and then one per piece. As
PyTorch's ``meta`` tensors (no memory), ``data_ptr`` is the null address plus the offset's
bytes, which keeps the core's address arithmetic (overlap checks, ``tw.save``'s sharing)
right within a storage; comparing addresses across storages tells nothing.
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Optional

from tensorweaver.contract.cpu_loops import loop_order

Layout = tuple[tuple[int, ...], int, int]


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides, in elements, of ``shape``."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def viewed_strides(
    old: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]
) -> Optional[tuple[int, ...]]:
    """The strides of PyTorch's view of an array of shape ``old`` laid out with ``strides``
    as shape ``new`` (its ``computeStride``), or None where PyTorch's reshape copies."""
    if math.prod(old) == 0:
        return strides if old == new else c_strides(new)
    if not old:
        return c_strides(new)
    found = [0] * len(new)
    d = len(new) - 1
    # each run of old axes that lie one after another in memory becomes a run of new axes
    chunk_base, held = strides[-1], 1
    for k in range(len(old) - 1, -1, -1):
        held *= old[k]
        if k == 0 or (old[k - 1] != 1 and strides[k - 1] != held * chunk_base):
            seen = 1
            while d >= 0 and (seen < held or new[d] == 1):
                found[d] = chunk_base * seen
                seen *= new[d]
                d -= 1
            if seen != held:
                return None
            if k > 0:
                chunk_base, held = strides[k - 1], 1
    return tuple(found) if d == -1 else None


def _order(shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
    """The axes of an array of ``shape`` laid out with ``strides``, outermost first (by
    decreasing stride, ties in their own order); ``()`` where that is row-major order; None
    where it cannot decide an elementwise result's layout (0-d or 1-d, or a broadcast axis)."""
    if len(shape) < 2 or any(s == 0 and n > 1 for s, n in zip(strides, shape)):
        return None
    order = tuple(sorted(range(len(shape)), key=lambda d: -strides[d]))
    return () if order == tuple(range(len(shape))) else order


class Layouts:
    """The layout of each view the backend's view primitives made, kept by identity while
    the view lives (with its shape: cuPyNumeric's ``.shape`` costs microseconds)."""

    def __init__(self, transpose: Any) -> None:
        #: the library's transpose (a Legate view)
        self._transpose = transpose
        #: id -> (weak reference to the view, shape, strides, offset, storage owner, and the
        #: axis order in which an elementwise result follows it: see _order)
        self._placed: dict[int, tuple] = {}

    def _place(self, view: Any, shape: tuple, strides: tuple, offset: int, owner: Any) -> Any:
        """Record ``view`` (of ``shape``) as laid out with ``strides`` from ``offset`` in
        ``owner``'s storage; ``view``."""
        key = id(view)
        placed = self._placed

        def forget(_: Any) -> None:
            if placed.get(key, (None,))[0] is ref:
                del placed[key]

        ref = weakref.ref(view, forget)
        shape, strides = tuple(shape), tuple(strides)
        placed[key] = (ref, shape, strides, offset, owner, _order(shape, strides))
        return view

    def _where(self, a: Any) -> tuple:
        """``(shape, strides, offset, owner)`` of ``a``: recorded, else a new array's."""
        placed = self._placed.get(id(a))
        if placed is not None and placed[0]() is a:
            return placed[1:5]
        shape = tuple(a.shape)
        return shape, c_strides(shape), 0, a

    def _torch_order(self, a: Any) -> Optional[tuple[int, ...]]:
        """The axes, outermost first, in which PyTorch lays out a result like ``a`` that is
        no elementwise one (flip, argsort: ``empty_like``'s ``preserve_format``, the
        contract's ``loop_order`` of ``a``'s strides); None for row-major order (a new
        array's, told cheaply)."""
        placed = self._placed.get(id(a))
        if placed is None or placed[0]() is not a or len(placed[1]) < 2:
            return None
        order = loop_order(placed[1], (placed[2],))
        return None if order == tuple(range(len(order))) else order

    def _in_torch_order(self, fn: Any, a: Any, order: tuple[int, ...], axes: Any) -> Any:
        """``fn(a, axes)`` (a new array; ``axes`` an axis or a sequence of them) laid out in
        the axis order ``order``: computed on ``a`` seen in that order (a Legate view), its
        result seen in ``a``'s order again."""
        where = order.index
        moved = where(axes) if isinstance(axes, int) else tuple(map(where, axes))
        out = fn(self._transpose(a, order), moved)
        return self.permute(out, tuple(map(where, range(len(order)))))

    # the view primitives' layouts, from their input's
    def _permuted(self, out: Any, a: Any, perm: tuple) -> Any:
        shape, strides, offset, owner = self._where(a)
        moved = (tuple(shape[p] for p in perm), tuple(strides[p] for p in perm))
        return self._place(out, *moved, offset, owner)

    def _expanded(self, out: Any, a: Any, shape: tuple) -> Any:
        old, strides, offset, owner = self._where(a)
        lead = len(shape) - len(old)
        kept = (s if n == m else 0 for s, n, m in zip(strides, old, shape[lead:]))
        return self._place(out, shape, (*(0,) * lead, *kept), offset, owner)

    def _sliced(self, out: Any, a: Any, starts: tuple, stops: tuple, steps: tuple) -> Any:
        _, strides, offset, owner = self._where(a)
        offset += sum(i * s for i, s in zip(starts, strides) if i)
        shape = tuple(max(0, -(-(e - b) // k)) for b, e, k in zip(starts, stops, steps))
        return self._place(out, shape, tuple(s * k for s, k in zip(strides, steps)), offset, owner)

    def _reshaped(self, out: Any, a: Any, shape: tuple) -> Any:
        if out is a:
            return out
        old, strides, offset, owner = self._where(a)
        found = viewed_strides(old, strides, tuple(shape))
        if found is None:  # PyTorch copies: a storage of its own
            return out
        return self._place(out, shape, found, offset, owner)

    def _follow_layouts(self, names: tuple[str, ...]) -> None:
        """Make the elementwise primitives ``names`` lay their result out as PyTorch's do:
        in the axis order of the first operand (of more than one axis, with no broadcast
        axis) by its strides; where that is not row-major order (a transpose, channels-last),
        the primitive computes on the operands seen in that order and returns its result
        seen in theirs again (Legate transposes: views, no copy)."""
        for name in names:
            setattr(self, name, self._following(getattr(self, name)))

    def _following(self, fn: Any) -> Any:
        placed = self._placed

        def following(*args: Any) -> Any:
            for a in args:
                if id(a) in placed:
                    return self._in_order(fn, args)
            return fn(*args)  # every operand new, so row-major: the common case

        return following

    def _in_order(self, fn: Any, args: tuple) -> Any:
        """``fn(*args)`` in the axis order that decides the result's layout (see
        :meth:`_follow_layouts`), where some operand is a view."""
        placed = self._placed
        for a in args:
            found = placed.get(id(a))
            if found is None or found[0]() is not a:
                if getattr(a, "ndim", 0) < 2:
                    continue  # (0-d operands, dtypes)
                break  # a new array: row-major
            order = found[5]
            if order is None:
                continue  # 0-d, or a broadcast: the next operand decides, as in PyTorch
            if not order:
                break
            # (the library's transpose, not the primitive's: a broadcast operand stays one,
            # where permute would copy it; these views go to fn alone)
            move = self._transpose
            moved = [move(b, order) if getattr(b, "ndim", 0) > 1 else b for b in args]
            back = tuple(order.index(d) for d in range(len(order)))
            return self.permute(fn(*moved), back)
        return fn(*args)

    # the optional primitives
    def layout(self, a: Any) -> Optional[Layout]:
        _, strides, offset, _ = self._where(a)
        return strides, offset, offset * a.dtype.itemsize

    def storage(self, a: Any) -> Any:
        return self._where(a)[3]

    def contiguous(self, a: Any) -> Any:
        placed = self._placed.get(id(a))
        if placed is None or placed[0]() is not a:
            return a  # a new array: row-major (the core asks on every in-place op)
        _, shape, strides = placed[:3]
        if 0 in shape:
            return a
        step = 1
        for n, s in zip(reversed(shape), reversed(strides)):
            if n != 1 and s != step:
                return self._copy(a)
            step *= n
        return a

    def _copy(self, a: Any) -> Any:
        """A new store, row-major, holding ``a``'s values: the one task ``contiguous``
        launches (so the backend runs it on the device's processors)."""
        return a.copy()
