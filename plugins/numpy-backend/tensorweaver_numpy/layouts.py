"""The memory layout of a binary elementwise result, as PyTorch's TensorIterator chooses it.

NumPy's ``order="K"`` follows its operands' layout where they agree, and falls back to C
order where they differ (a channels-last tensor plus a C-ordered one). PyTorch instead sorts
the dimensions by the operands' strides, the first operand deciding each pair of dimensions
unless it is broadcast along one of them (then the next operand decides). Only a first
operand that is not C-ordered, or one with a size-1 axis (whose stride C order's flag does
not read, and whose ties the next operand breaks), can make the two differ, so only those
cases pay for the sort. Also: the layouts of one-operand results, of dtype conversions and
of ``where``; whether torch reads an array's layout as channels-last (kernels that follow it).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from tensorweaver.contract.cpu_loops import loop_order

from tensorweaver_numpy._quiet import ignore_errors, restore_errors


def binary_ufunc(ufunc: np.ufunc, quiet: bool = True, bounds: bool = False) -> Callable[..., Any]:
    """A backend method ``(self, a, b)`` applying ``ufunc`` (with warnings off where
    ``quiet``), its result laid out as PyTorch lays out an elementwise result (see the
    module's docs). ``bounds``: a 0-d operand may be a bound of clamp (or relu's zero, or
    pow's number exponent), which torch's kernels do not lay out by (no operand of their
    loop), so a 0-d operand is not laid out by either."""

    def laid_out(self: object, a: Any, b: Any) -> Any:
        if a.ndim > 1:
            if not a.flags.c_contiguous or (
                1 in a.shape
                and (a.base is not None or (isinstance(b, np.ndarray) and not b.flags.c_contiguous))
                and _odd(a, b, bounds)
            ):
                return _in_torch_order(ufunc, a, b)
        elif (
            isinstance(b, np.ndarray)
            and b.ndim > 1
            and (
                not b.flags.c_contiguous
                or (b.base is not None and 1 in b.shape and _odd(b, a, bounds))
            )
        ):
            return _in_torch_order(ufunc, a, b)
        return ufunc(a, b)

    def method(self: object, a: Any, b: Any) -> Any:
        token = ignore_errors()
        try:  # (laid_out's body, inline: one frame fewer on the hottest primitives)
            if a.ndim > 1:
                # (a C-ordered array with a size-1 axis: only a view's stride there may not
                # be C's, and only a non-C b may break its ties; both told cheaply first)
                if not a.flags.c_contiguous or (
                    1 in a.shape
                    and (
                        a.base is not None
                        or (isinstance(b, np.ndarray) and not b.flags.c_contiguous)
                    )
                    and _odd(a, b, bounds)
                ):
                    return _in_torch_order(ufunc, a, b)
            elif (
                isinstance(b, np.ndarray)
                and b.ndim > 1
                and (
                    not b.flags.c_contiguous
                    or (b.base is not None and 1 in b.shape and _odd(b, a, bounds))
                )
            ):
                return _in_torch_order(ufunc, a, b)  # (a number first: b decides)
            return ufunc(a, b)
        finally:
            restore_errors(token)

    chosen = method if quiet else laid_out
    chosen.__name__ = chosen.__qualname__ = ufunc.__name__
    if quiet:  # (a compiled step turns warnings off once around all its calls: _quiet.loud)
        method._loud = laid_out  # type: ignore[attr-defined]
    return chosen


def _odd(a: np.ndarray, b: Any, bounds: bool) -> bool:
    """Whether PyTorch lays out ``a`` (C-ordered, with a size-1 axis) op ``b`` otherwise
    than C order: where ``b`` is an array of ``a``'s shape that is not C-ordered (its
    strides break the ties of ``a``'s size-1 axes), or where a size-1 axis's stride is not
    C's and ``b`` is not a C-ordered array of ``a``'s shape (torch's contiguous shortcut
    needs operands of one shape; a clamp bound where ``bounds``): its loop order places
    that axis by its stride."""
    if isinstance(b, np.ndarray) and b.ndim:
        if b.shape == a.shape:
            if 0 not in b.strides:
                return not b.flags.c_contiguous
            if not b.flags.c_contiguous and _breaks_ties(a.shape, b.strides):
                return True  # (a b broadcast by the core along other axes breaks ties too)
    elif bounds and isinstance(b, np.ndarray):
        return False
    if a.base is None:
        return False  # (a new array's size-1 strides are C's: only a view's may not be)
    step = a.itemsize
    for n, s in zip(reversed(a.shape), reversed(a.strides)):
        if s != step:
            return True
        step *= n
    return False


def _breaks_ties(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether ``strides`` (some 0: broadcast) order, against C order, two axes that a
    C-ordered array of ``shape`` gives one stride: a run of size-1 axes and the axis
    before it. PyTorch breaks such a tie by the next operand's two strides, both non-0."""
    low = 0  # (the group's least non-0 stride so far; 0: none yet)
    for n, s in zip(shape, strides):
        if n != 1:
            low = s
        elif s:
            if 0 < low < s:
                return True
            if not low or s < low:
                low = s
    return False


def _in_torch_order(ufunc: np.ufunc, a: np.ndarray, b: Any) -> np.ndarray:
    """``ufunc(a, b)`` computed C-ordered over the operands seen in PyTorch's axis order,
    then seen in the logical order again."""
    alone = not isinstance(b, np.ndarray) or not b.ndim
    if (alone or b.strides == a.strides) and 1 not in a.shape:
        # (one layout to follow: NumPy's order="K" follows it, but for a size-1 axis's
        # stride, which it sets apart from torch's)
        return ufunc(a, b)
    shape = a.shape if alone or a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape)
    strides = a.strides if a.shape == shape else _broadcast_strides(a, shape)
    if min(strides) < 0:
        return ufunc(a, b)  # (memory read backwards, which PyTorch never lays out)
    if 0 in strides or 1 in shape or len(set(strides)) < len(strides):
        steps = [strides] if alone else [strides, _broadcast_strides(b, shape)]
        order = loop_order(shape, steps)
    else:  # (the first operand decides every pair of dimensions: its order)
        order = tuple(sorted(range(len(shape)), key=strides.__getitem__, reverse=True))
    if order == tuple(range(len(shape))):
        return ufunc(a, b)
    moved = [_seen_in(x, shape, order) for x in (a, b)]
    back = tuple(order.index(d) for d in range(len(order)))
    return ufunc(*moved, order="C").transpose(back)


def _broadcast_strides(x: np.ndarray, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``x``'s strides over ``shape``: 0 along a dimension it is broadcast along."""
    lead = len(shape) - x.ndim
    return (0,) * lead + tuple(
        0 if n == 1 and shape[lead + d] != 1 else s
        for d, (n, s) in enumerate(zip(x.shape, x.strides))
    )


def _seen_in(x: Any, shape: tuple[int, ...], order: tuple[int, ...]) -> Any:
    """``x`` (broadcast to ``shape``'s rank by leading size-1 dimensions) with its axes in
    ``order``; a number or a 0-d array as it is."""
    if not isinstance(x, np.ndarray) or not x.ndim:
        return x
    return x.reshape((1,) * (len(shape) - x.ndim) + x.shape).transpose(order)


def unary_ufunc(ufunc: np.ufunc, quiet: bool = True) -> Callable[..., Any]:
    """A backend method ``(self, a)`` applying the one-operand ``ufunc`` (with warnings off
    where ``quiet``), its result laid out as PyTorch lays out a one-operand result."""

    def laid_out(self: object, a: Any) -> Any:
        if a.ndim > 1 and not a.flags.c_contiguous:
            return unary_layout(ufunc(a), a)
        return ufunc(a)

    def method(self: object, a: Any) -> Any:
        token = ignore_errors()
        try:  # (laid_out's body, inline: one frame fewer on the hottest primitives)
            if a.ndim > 1 and not a.flags.c_contiguous:
                return unary_layout(ufunc(a), a)
            return ufunc(a)
        finally:
            restore_errors(token)

    chosen = method if quiet else laid_out
    chosen.__name__ = chosen.__qualname__ = ufunc.__name__
    if quiet:  # (a compiled step turns warnings off once around all its calls: _quiet.loud)
        method._loud = laid_out  # type: ignore[attr-defined]
    return chosen


def unary_layout(r: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``r``, NumPy's elementwise result of ``a`` (an array that is not C-ordered), laid out
    as PyTorch's TensorIterator lays out a one-operand result. NumPy's ``order="K"`` agrees
    with it but for the strides of size-1 axes, which torch copies from a dense input
    (channels-last dense: its canonical strides) or places by its loop order."""
    shape, size = a.shape, a.itemsize
    if 1 not in shape or 0 in shape or min(a.strides) < 0 or any(s % size for s in a.strides):
        return r
    wanted = _unary_steps(shape, tuple(s // size for s in a.strides))
    if r.strides == tuple(w * r.itemsize for w in wanted):
        return r
    out = _empty_strided(shape, r.dtype, wanted)
    out[...] = r
    return out


def iterator_layout(out: np.ndarray, operands: tuple) -> np.ndarray:
    """``out``, the elementwise result of ``operands`` (arrays of ``out``'s shape, 0-d arrays
    and numbers; the core broadcast them, so a stride 0 marks a broadcast one), laid out as
    PyTorch's TensorIterator lays out a new result. Operands of one shape (no number, no
    broadcast) that are all contiguous, all channels-last, or all dense with one set of
    strides give those (its fast setup); otherwise C strides in the loop order of all
    operands' strides (size-1 axes placed by theirs)."""
    shape = out.shape
    steps = []
    for x in operands:
        if isinstance(x, np.ndarray) and x.ndim:
            size = x.itemsize
            if min(x.strides) < 0 or any(s % size for s in x.strides):
                return out  # (memory read backwards, which PyTorch never lays out)
            steps.append(tuple(s // size for s in x.strides))
    if len(shape) < 2 or 0 in shape or not steps:
        return out
    if len(steps) == len(operands) and not any(0 in s for s in steps):
        wanted = _fast_setup(shape, steps)
    else:
        wanted = None
    if wanted is None:
        wanted = _c_steps(shape, loop_order(shape, steps))
    if out.strides == tuple(w * out.itemsize for w in wanted):
        return out
    relaid = _empty_strided(shape, out.dtype, wanted)
    relaid[...] = out
    return relaid


def _fast_setup(shape: tuple[int, ...], steps: list) -> tuple[int, ...] | None:
    """The element strides of TensorIterator's fast setup for operands of one ``shape``
    stepping ``steps``, or None where it takes none."""
    rank = len(shape)
    if all(_dense(shape, s, range(rank - 1, -1, -1)) for s in steps):
        return _c_steps(shape, tuple(range(rank)))
    fastest = _CHANNELS_LAST_ORDER.get(rank)
    if fastest is not None and all(_dense(shape, s, fastest) for s in steps):
        return _c_steps(shape, fastest[::-1])
    first = steps[0]
    if all(s == first for s in steps) and _dense(
        shape, first, sorted(range(rank), key=first.__getitem__)
    ):
        return first
    return None


def cast_layout(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``a`` converted to ``dtype`` (as ``astype``) and laid out as PyTorch lays out a dtype
    conversion (``empty_like``'s ``preserve_format``): with ``a``'s own strides where it is
    dense (size-1 axes aside, whatever their strides; an empty array counts as dense), else
    C strides in its loop order. ``astype``'s ``order="K"`` differs: it puts a stride-0 axis
    fastest and gives size-1 axes C's strides."""
    shape, size = a.shape, a.itemsize
    if min(a.strides) < 0 or any(s % size for s in a.strides):
        return a.astype(dtype)
    steps = tuple(s // size for s in a.strides)
    if 0 in shape:
        return np.ndarray(
            shape, dtype, np.empty(0, dtype), strides=[w * dtype.itemsize for w in steps]
        )
    if not _dense(shape, steps, sorted(range(a.ndim), key=steps.__getitem__)):
        steps = _c_steps(shape, loop_order(shape, [steps]))
    out = _empty_strided(shape, dtype, steps)
    np.copyto(out, a, casting="unsafe")
    return out


def _empty_strided(shape: tuple[int, ...], dtype: np.dtype, steps: Any) -> np.ndarray:
    """A new array of ``shape`` with element strides ``steps`` (non-negative, dense)."""
    span = 1 + sum((n - 1) * w for n, w in zip(shape, steps))
    item = dtype.itemsize
    return np.ndarray(shape, dtype, np.empty(span, dtype), strides=[w * item for w in steps])


def _c_steps(shape: tuple[int, ...], order: tuple[int, ...]) -> tuple[int, ...]:
    """The element strides of a row-major array of ``shape`` in the axis order ``order``
    (outermost first)."""
    wanted, step = [0] * len(shape), 1
    for d in reversed(order):
        wanted[d] = step
        step *= shape[d]
    return tuple(wanted)


def _unary_steps(shape: tuple[int, ...], steps: tuple[int, ...]) -> tuple[int, ...]:
    """The element strides torch gives the one-operand result of an input of ``shape`` and
    element strides ``steps`` that is not C-ordered: channels-last ones where the input is
    dense in that order (4-d, 5-d), the input's own where it is dense in another, else C
    ones in its loop order."""
    rank = len(shape)
    if rank in (4, 5) and _dense(shape, steps, (1, *range(rank - 1, 1, -1), 0)):
        order: tuple[int, ...] = (0, *range(2, rank), 1)
    elif _dense(shape, steps, sorted(range(rank), key=steps.__getitem__)):
        return steps
    else:
        order = loop_order(shape, [steps])
    return _c_steps(shape, order)


def _dense(shape: tuple[int, ...], steps: tuple[int, ...], fastest_first: Any) -> bool:
    """Whether the axes in ``fastest_first`` (size-1 ones aside, as torch's contiguity tests
    set them aside) tile the memory without gaps or overlaps."""
    step = 1
    for d in fastest_first:
        if shape[d] != 1:
            if steps[d] != step:
                return False
            step *= shape[d]
    return True


#: The axes of a 4-d and a 5-d array from the fastest to the slowest in channels_last order.
_CHANNELS_LAST_ORDER = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}


def channels_last(a: np.ndarray) -> bool:
    """Whether torch reads ``a``'s strides as channels_last (``suggest_memory_format``): its
    axes' strides grow in channels-last order, ambiguous cases (C of stride 0, N11W...)
    read as contiguous. A C-ordered array is not (the common case, kept cheap)."""
    order = _CHANNELS_LAST_ORDER.get(a.ndim)
    if order is None or a.flags.c_contiguous or a.strides[1] == 0:
        return False
    if a.transpose(order[::-1]).flags.c_contiguous:  # dense channels_last (~0.3 us)
        return True
    least = 0
    for d in order:
        size, stride = a.shape[d], a.strides[d]
        if size == 0 or stride < least or (d == 0 and least == a.strides[1]):
            return False
        least = stride * size if size > 1 else stride
    return True
