"""matmul: 2-d and batched with broadcast batch axes, on transposed views, with empty inner
and outer dimensions, and NaN/inf propagation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Callable

import numpy as np

from tensorweaver.check.case import Case, Measure
from tensorweaver.check.cases.operands import FLOATS, inf, nan
from tensorweaver.check.compare import PRIMITIVE_TOLERANCE, to_dtype, widen
from tensorweaver.check.context import Context
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType


def _values(shape: tuple[int, ...], dtype: DType, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.is_floating_point:
        return to_dtype(rng.uniform(-1, 1, shape), dtype)
    return to_dtype(rng.integers(-3, 4, shape), dtype)


def _tolerance(dtype: DType, k: int) -> float | None:
    # k products summed: up to k roundings of terms up to 1 in size
    return 2 * k * PRIMITIVE_TOLERANCE[dtype] if dtype.is_floating_point else None


SHAPES = {"2-d": ((3, 4), (4, 2)), "batched": ((2, 1, 3, 4), (1, 3, 4, 2))}


def _matmul(dtype: DType) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        for label, (sa, sb) in SHAPES.items():
            a, b = _values(sa, dtype, 1), _values(sb, dtype, 2)
            out = ctx.call("matmul", ctx.put(a, dtype), ctx.put(b, dtype))
            want = np.matmul(widen(a), widen(b))
            yield ctx.check(
                f"matmul {label} {sa} @ {sb}", out, want, dtype, _tolerance(dtype, sa[-1])
            )
        yield ctx.untouched()

    return run


def _strided(ctx: Context) -> Iterator[Measure]:
    a, b = _values((4, 3), d.float32, 3), _values((2, 4), d.float32, 4)
    # both operands are transposes: (3, 4) @ (4, 2) from views, as x.T @ y.T
    at = ctx.call("permute", ctx.put(a, d.float32), (1, 0))
    bt = ctx.call("permute", ctx.put(b, d.float32), (1, 0))
    want = widen(a).T @ widen(b).T
    yield ctx.check(
        "matmul of transposed views",
        ctx.call("matmul", at, bt),
        want,
        d.float32,
        _tolerance(d.float32, 4),
    )
    yield ctx.untouched()


def _empty(ctx: Context) -> Iterator[Measure]:
    for sa, sb in (((3, 0), (0, 2)), ((0, 4), (4, 2)), ((2, 0, 3), (2, 3, 0))):
        a, b = np.zeros(sa), np.zeros(sb)
        out = ctx.call("matmul", ctx.put(a, d.float32), ctx.put(b, d.float32))
        yield ctx.check(f"matmul {sa} @ {sb}", out, a @ b, d.float32, 0.0)


def _nan_inf(ctx: Context) -> Iterator[Measure]:
    a = [[nan, 1.0], [inf, 0.0], [1.0, 2.0]]
    b = [[1.0, 0.0], [2.0, -1.0]]
    with np.errstate(all="ignore"):
        want = np.array(a) @ np.array(b)  # inf * 0 is NaN; NaN spreads along its row
    out = ctx.call("matmul", ctx.put(a, d.float64), ctx.put(b, d.float64))
    yield ctx.check("matmul", out, want, d.float64)


def cases() -> list[Case]:
    out = [Case(f"primitive/matmul/{t.name}", _matmul(t)) for t in (*FLOATS, d.int32, d.int64)]
    return out + [
        Case("primitive/matmul/strided", _strided),
        Case("primitive/matmul/empty", _empty),
        Case("primitive/matmul/nan-inf", _nan_inf),
    ]
