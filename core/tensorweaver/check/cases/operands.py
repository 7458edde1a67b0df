"""Standard operands of every dtype, and the layouts the core hands a backend.

The float pair covers signed zeros, NaN, both infinities, 0 * inf, inf - inf, x / 0, 0 / 0
and halves for round-half-to-even; the integer pairs every sign combination with nonzero
divisors, and results (a + b, a - b, a * b, a // b, a % b, a ** e) that fit int8 and uint8.

A **layout** is how the operand reaches a primitive: ``standard`` (3, 4) fresh from the
host, or a view the core makes with primitives, as it does for ``x.T[::2]``, ``x[:0]`` and
``x[0, 2]``: ``strided`` (2, 3), ``empty`` (0, 4) and ``0-d``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweaver.check.compare import to_dtype
from tensorweaver.check.context import Context
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

nan, inf = float("nan"), float("inf")

FLOATS = (d.float16, d.bfloat16, d.float32, d.float64)
SIGNED = (d.int8, d.int16, d.int32, d.int64)
INTS = (d.uint8, *SIGNED)
NUMERIC = INTS + FLOATS
ALL = (d.bool_, *NUMERIC)

_FLOAT = (
    [[0.0, -0.0, 1.25, -2.5], [0.5, 3.0, nan, inf], [-inf, 1e-3, 6.5, -0.75]],
    [[inf, -1.0, 0.0, -0.0], [2.0, -3.5, 1.0, -inf], [2.5, nan, -2.0, 0.3]],
)
_SIGNED = (
    [[-5, -3, -2, -1], [0, 1, 2, 3], [4, -4, 3, -1]],
    [[2, -3, 3, -2], [1, -1, 2, 3], [-3, 3, -2, -1]],
)
_UNSIGNED = (  # b <= a, so a - b stays in range
    [[1, 2, 3, 4], [5, 6, 6, 2], [3, 4, 5, 6]],
    [[1, 2, 1, 3], [4, 5, 6, 1], [2, 2, 3, 4]],
)
_BOOL = (
    [[True, False, True, False], [True, True, False, False], [False, True, False, True]],
    [[True, True, False, False], [False, True, False, True], [True, False, True, False]],
)
#: Non-negative integer exponents: with the integer a operands, every power fits int8/uint8.
EXPONENTS = [[0, 1, 2, 3], [3, 2, 1, 0], [1, 0, 3, 2]]


def standard(dtype: DType, which: str = "a") -> np.ndarray:
    """Standard operand ``which`` (``a``, ``b`` or ``exponents``) as a host array of ``dtype``."""
    if which == "exponents":
        return to_dtype(EXPONENTS, dtype)
    if dtype is d.bool_:
        pair = _BOOL
    elif dtype is d.uint8:
        pair = _UNSIGNED
    elif dtype in SIGNED:
        pair = _SIGNED
    else:
        pair = _FLOAT
    return to_dtype(pair[which == "b"], dtype)


#: layout -> (the view made on the backend with primitives, the same view on the host)
LAYOUTS: dict[str, tuple[Callable[[Context, Any], Any], Callable[[np.ndarray], np.ndarray]]] = {
    "standard": (lambda ctx, x: x, lambda h: h),
    "strided": (
        lambda ctx, x: ctx.call("slice", ctx.call("permute", x, (1, 0)), (0, 0), (4, 3), (2, 1)),
        lambda h: h.T[::2],
    ),
    "empty": (lambda ctx, x: ctx.call("slice", x, (0, 0), (0, 4), (1, 1)), lambda h: h[:0]),
    "0-d": (
        lambda ctx, x: ctx.call("reshape", ctx.call("slice", x, (0, 2), (1, 3), (1, 1)), ()),
        lambda h: h[0, 2],
    ),
}
EDGE_LAYOUTS = ("strided", "empty", "0-d")


def operand(ctx: Context, dtype: DType, which: str, layout: str) -> tuple[np.ndarray, Any]:
    """Standard operand ``which`` of ``dtype`` in ``layout``: (host values, backend array)."""
    host = standard(dtype, which)
    on_backend, on_host = LAYOUTS[layout]
    return np.asarray(on_host(host)), on_backend(ctx, ctx.put(host, dtype))
