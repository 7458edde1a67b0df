"""Standard operands of every dtype, and the layouts the core hands a backend.

The float pair covers signed zeros, NaN, both infinities, 0 * inf, inf - inf, x / 0, 0 / 0
and halves for round-half-to-even; the integer pairs every sign combination with nonzero
divisors, and results (a + b, a - b, a * b, a // b, a % b, a ** e) that fit int8 and uint8.

Each operand also comes in every layout of :mod:`tensorweaver.check.layouts`: (3, 4)
``transposed``, ``stepped`` and ``broadcast`` views, ``empty`` (0, 4) and ``0-d``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from tensorweaver.check.case import Measure, Skip
from tensorweaver.check.compare import to_dtype
from tensorweaver.check.context import Context
from tensorweaver.check.layouts import arrange
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


#: The dtypes layout cases run in: models train in them, and a backend may take another
#: path for each (cuPyNumeric sums float32 in float64, float64 as it is).
LAYOUT_FLOATS = (d.float32, d.float64)


def layout_dtypes(dtypes: tuple[DType, ...]) -> tuple[DType, ...]:
    """The dtypes of an op's layout cases: LAYOUT_FLOATS where it takes floats, else int32
    or bool."""
    floats = tuple(t for t in LAYOUT_FLOATS if t in dtypes)
    return floats or (next(t for t in (d.int32, d.bool_) if t in dtypes),)


def in_layout(
    make: Callable[[DType, str], Callable[[Context], Iterator[Measure]]],
    dtypes: tuple[DType, ...],
    layout: str,
) -> Callable[[Context], Iterator[Measure]]:
    """One case: ``make(dtype, layout)`` for each of ``dtypes`` the device has, each
    measure naming its dtype."""

    def run(ctx: Context) -> Iterator[Measure]:
        present = [t for t in dtypes if t in ctx.dtypes]
        if not present:
            raise Skip(f"{ctx.device} has none of {', '.join(t.name for t in dtypes)}")
        for t in present:
            for m in make(t, layout)(ctx):
                yield replace(m, what=f"{m.what} [{t.name}]")

    return run


def operand(ctx: Context, dtype: DType, which: str, layout: str) -> tuple[np.ndarray, Any]:
    """Standard operand ``which`` of ``dtype`` in ``layout`` (see
    :mod:`tensorweaver.check.layouts`): (the values it holds on the host, backend array)."""
    return arrange(ctx, standard(dtype, which), dtype, layout)
