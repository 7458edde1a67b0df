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


def binary_ufunc(ufunc: np.ufunc) -> Callable[..., Any]:
    """A backend method ``(self, a, b)`` applying ``ufunc`` with warnings off, its result
    laid out as PyTorch lays out an elementwise result (see the module's docs)."""

    def laid_out(self: object, a: Any, b: Any) -> Any:
        if a.ndim > 1 and not a.flags.c_contiguous:
            return _in_torch_order(ufunc, a, b)
        return ufunc(a, b)

    def method(self: object, a: Any, b: Any) -> Any:
        token = ignore_errors()
        try:  # (laid_out's body, inline: one frame fewer on the hottest primitives)
            if a.ndim > 1 and not a.flags.c_contiguous:
                return _in_torch_order(ufunc, a, b)
            return ufunc(a, b)
        finally:
            restore_errors(token)

    method.__name__ = method.__qualname__ = ufunc.__name__
    # (a compiled step turns warnings off once around all its calls: _quiet.loud)
    method._loud = laid_out  # type: ignore[attr-defined]
    return method


def _in_torch_order(ufunc: np.ufunc, a: np.ndarray, b: Any) -> np.ndarray:
    """``ufunc(a, b)`` computed C-ordered over the operands seen in PyTorch's axis order,
    then seen in the logical order again."""
    if not isinstance(b, np.ndarray) or not b.ndim or b.strides == a.strides:
        return ufunc(a, b)  # (one layout to follow: NumPy's order="K" follows it)
    shape = a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape)
    strides = a.strides if a.shape == shape else _broadcast_strides(a, shape)
    if min(strides) < 0:
        return ufunc(a, b)  # (memory read backwards, which PyTorch never lays out)
    if 0 in strides or 1 in shape or len(set(strides)) < len(strides):
        order = loop_order(shape, [strides, _broadcast_strides(b, shape)])
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
