"""The memory layout of a binary elementwise result, as PyTorch's TensorIterator chooses it.

NumPy's ``order="K"`` follows its operands' layout where they agree, and falls back to C
order where they differ (a channels-last tensor plus a C-ordered one). PyTorch instead sorts
the dimensions by the operands' strides, the first operand deciding each pair of dimensions
unless it is broadcast along one of them (then the next operand decides). Only a first
operand that is not C-ordered can make the two differ, so only that case pays for the sort.
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
