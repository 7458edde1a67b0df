"""The layouts in which the core hands arrays to a backend, made with the backend's own
primitives, so that every case can also run on them.

The core passes arrays on as its primitives returned them: a gradient from ``sum`` is an
``expand`` of a 0-d array, ``x.T`` a ``permute``, ``x[::2]`` a stepped ``slice``. The IR
wants every primitive and fused kernel to take these as input. A layout turns host values
``h`` into such an array, and says which values the array then holds:

* ``standard``: ``from_host(h)``, fresh and contiguous.
* ``transposed``: ``permute`` of ``from_host`` of ``h`` with its axes reversed (arrays of
  fewer than two axes have nothing to transpose: standard). Same values.
* ``stepped``: ``slice(x, 1, 2n + 1, 2)`` on every axis of an array of 2n + 1 there,
  whose other elements are a filler: a view with an offset and no unit stride. Same
  values.
* ``broadcast``: ``expand`` of ``from_host(h[:1])``: stride 0 along axis 0, the first row
  repeated. The values change (0-d arrays stay standard).
* ``empty``: ``slice`` of the first zero rows, shape ``(0, ...)``.
* ``0-d``: ``reshape`` of a one-element ``slice`` to ``()``: the last element.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from tensorweaver.contract.dtypes import DType

if TYPE_CHECKING:
    from tensorweaver.check.context import Context

#: Layouts that keep shape and values: any case can take any input in them.
SAME_VALUES = ("transposed", "stepped")
#: Layouts that keep the shape: a case whose shapes are fixed can take its inputs in them.
SAME_SHAPE = (*SAME_VALUES, "broadcast")
#: Every layout but ``standard``, in the order case ids list them.
EDGE = (*SAME_SHAPE, "empty", "0-d")


def _filler(dtype: np.dtype) -> Any:
    # A value no operand of the cases holds, so a primitive that reads it is caught.
    if dtype.kind == "b":
        return True
    return 77 if dtype.kind == "u" else -77


def _standard(ctx: Context, h: np.ndarray, dtype: DType) -> tuple[np.ndarray, Any]:
    return h, ctx.put(h, dtype)


def _transposed(ctx: Context, h: np.ndarray, dtype: DType) -> tuple[np.ndarray, Any]:
    if h.ndim < 2:
        return _standard(ctx, h, dtype)
    reverse = tuple(reversed(range(h.ndim)))
    # C order on the host: from_host may keep a host array's strides.
    contiguous = np.ascontiguousarray(h.transpose(reverse))
    return h, ctx.call("permute", ctx.put(contiguous, dtype), reverse)


def _stepped(ctx: Context, h: np.ndarray, dtype: DType) -> tuple[np.ndarray, Any]:
    if h.ndim == 0:
        return _standard(ctx, h, dtype)
    big = np.full(tuple(2 * n + 1 for n in h.shape), _filler(h.dtype), h.dtype)
    big[(slice(1, None, 2),) * h.ndim] = h
    x = ctx.put(big, dtype)
    return h, ctx.call("slice", x, (1,) * h.ndim, big.shape, (2,) * h.ndim)


def _broadcast(ctx: Context, h: np.ndarray, dtype: DType) -> tuple[np.ndarray, Any]:
    if h.ndim == 0:
        return _standard(ctx, h, dtype)
    shown = np.broadcast_to(h[:1], h.shape).copy()
    return shown, ctx.call("expand", ctx.put(h[:1], dtype), h.shape)


def _empty(ctx: Context, h: np.ndarray, dtype: DType) -> tuple[np.ndarray, Any]:
    x = ctx.put(h, dtype)
    stops = (0, *h.shape[1:])
    return h[:0], ctx.call("slice", x, (0,) * h.ndim, stops, (1,) * h.ndim)


def _scalar(ctx: Context, h: np.ndarray, dtype: DType) -> tuple[np.ndarray, Any]:
    x = ctx.put(h, dtype)
    last = tuple(n - 1 for n in h.shape)
    one = ctx.call("slice", x, last, h.shape, (1,) * h.ndim)
    return h[last], ctx.call("reshape", one, ())


_MAKERS: dict[str, Callable[[Context, np.ndarray, DType], tuple[np.ndarray, Any]]] = {
    "standard": _standard,
    "transposed": _transposed,
    "stepped": _stepped,
    "broadcast": _broadcast,
    "empty": _empty,
    "0-d": _scalar,
}


def arrange(ctx: Context, host: np.ndarray, dtype: DType, layout: str) -> tuple[np.ndarray, Any]:
    """``host`` (already of ``dtype``) on ``ctx``'s backend in ``layout``: (the values the
    array holds, as a host array; the backend array). ``empty`` and ``0-d`` need ndim >= 1."""
    shown, native = _MAKERS[layout](ctx, np.asarray(host), dtype)
    return np.asarray(shown), native
