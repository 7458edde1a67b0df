"""The memory layout of a binary elementwise result, as PyTorch's TensorIterator chooses it.

NumPy's ``order="K"`` follows its operands' layout where they agree, and falls back to C
order where they differ (a channels-last tensor plus a C-ordered one). PyTorch instead sorts
the dimensions by the operands' strides, the first operand deciding each pair of dimensions
unless it is broadcast along one of them (then the next operand decides). Only a first
operand that is not C-ordered can make the two differ, so only that case pays for the sort.
Also: whether torch reads an array's layout as channels-last (kernels that follow it).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from tensorweaver.contract.cpu_loops import loop_order

from tensorweaver_numpy._quiet import ignore_errors, restore_errors


def binary_ufunc(ufunc: np.ufunc, quiet: bool = True, bounds: bool = False) -> Callable[..., Any]:
    """A backend method ``(self, a, b)`` applying ``ufunc`` (with warnings off where
    ``quiet``), its result laid out as PyTorch lays out an elementwise result (see the
    module's docs). ``bounds``: a 0-d ``b`` may be a bound of clamp, which torch's clamp
    does not lay out by (no operand of its loop), so a 0-d ``b`` is not laid out by either."""

    def laid_out(self: object, a: Any, b: Any) -> Any:
        if a.ndim > 1:
            if not a.flags.c_contiguous or (
                a.base is not None and 1 in a.shape and _odd(a, b, bounds)
            ):
                return _in_torch_order(ufunc, a, b)
        elif isinstance(b, np.ndarray) and b.ndim > 1 and not b.flags.c_contiguous:
            return _in_torch_order(ufunc, a, b)
        return ufunc(a, b)

    def method(self: object, a: Any, b: Any) -> Any:
        token = ignore_errors()
        try:  # (laid_out's body, inline: one frame fewer on the hottest primitives)
            if a.ndim > 1:
                # (a C-ordered array's odd size-1 stride: only a view's, so a new array's
                # base tells it apart cheaply)
                if not a.flags.c_contiguous or (
                    a.base is not None and 1 in a.shape and _odd(a, b, bounds)
                ):
                    return _in_torch_order(ufunc, a, b)
            elif isinstance(b, np.ndarray) and b.ndim > 1 and not b.flags.c_contiguous:
                return _in_torch_order(ufunc, a, b)  # (a number or a row first: b decides)
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
    than C order: where a size-1 axis's stride is not C's and ``b`` is not an array of
    ``a``'s shape (torch's contiguous shortcut needs operands of one shape; a clamp bound
    where ``bounds``), its loop order places that axis by its stride."""
    if isinstance(b, np.ndarray) and (b.shape == a.shape or (bounds and not b.ndim)):
        return False
    step = a.itemsize
    for n, s in zip(reversed(a.shape), reversed(a.strides)):
        if s != step:
            return True
        step *= n
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
    item = r.itemsize
    if r.strides == tuple(w * item for w in wanted):
        return r
    span = 1 + sum((n - 1) * w for n, w in zip(shape, wanted))
    out = np.ndarray(shape, r.dtype, np.empty(span, r.dtype), strides=[w * item for w in wanted])
    out[...] = r
    return out


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
    wanted, step = [0] * rank, 1
    for d in reversed(order):
        wanted[d] = step
        step *= shape[d]
    return tuple(wanted)


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
