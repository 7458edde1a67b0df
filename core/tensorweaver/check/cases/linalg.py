"""matmul: 2-d and batched with broadcast batch axes, each operand in every layout that
keeps its shape (transposed, stepped, broadcast), empty inner and outer dimensions, and
NaN/inf propagation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Callable

import numpy as np

from tensorweaver.check.case import Case, Measure
from tensorweaver.check.cases.operands import FLOATS, LAYOUT_FLOATS, in_layout, inf, nan
from tensorweaver.check.compare import PRIMITIVE_TOLERANCE, to_dtype, widen
from tensorweaver.check.context import Context
from tensorweaver.check.layouts import SAME_SHAPE, arrange
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


def _matmul(dtype: DType, layout: str = "standard") -> Callable[[Context], Iterator[Measure]]:
    # In a layout, each operand in it beside a standard one, and both
    combos = (
        [(layout, layout)]
        if layout == "standard"
        else [(layout, "standard"), ("standard", layout), (layout, layout)]
    )

    def run(ctx: Context) -> Iterator[Measure]:
        for label, (sa, sb) in SHAPES.items():
            for left, right in combos:
                a, x = arrange(ctx, _values(sa, dtype, 1), dtype, left)
                b, y = arrange(ctx, _values(sb, dtype, 2), dtype, right)
                want = np.matmul(widen(a), widen(b))
                what = f"matmul {label} {sa} @ {sb}" + (
                    "" if left == right == "standard" else f" ({left} @ {right})"
                )
                yield ctx.check(
                    what, ctx.call("matmul", x, y), want, dtype, _tolerance(dtype, sa[-1])
                )
        yield ctx.untouched()

    return run


def _empty(ctx: Context) -> Iterator[Measure]:
    for sa, sb in (((3, 0), (0, 2)), ((0, 4), (4, 2)), ((2, 0, 3), (2, 3, 0))):
        a, b = np.zeros(sa), np.zeros(sb)
        out = ctx.call("matmul", ctx.put(a, d.float32), ctx.put(b, d.float32))
        yield ctx.check(f"matmul {sa} @ {sb}", out, a @ b, d.float32, 0.0)
    # the empty layout: no rows of a (3, 4) view
    a, x = arrange(ctx, _values((3, 4), d.float32, 1), d.float32, "empty")
    b = _values((4, 2), d.float32, 2)
    out = ctx.call("matmul", x, ctx.put(b, d.float32))
    yield ctx.check("matmul (0, 4) view @ (4, 2)", out, a @ b, d.float32, 0.0)
    yield ctx.untouched()


def _nan_inf(ctx: Context) -> Iterator[Measure]:
    a = [[nan, 1.0], [inf, 0.0], [1.0, 2.0]]
    b = [[1.0, 0.0], [2.0, -1.0]]
    with np.errstate(all="ignore"):
        want = np.array(a) @ np.array(b)  # inf * 0 is NaN; NaN spreads along its row
    out = ctx.call("matmul", ctx.put(a, d.float64), ctx.put(b, d.float64))
    yield ctx.check("matmul", out, want, d.float64)


def cases() -> list[Case]:
    out = [Case(f"primitive/matmul/{t.name}", _matmul(t)) for t in (*FLOATS, d.int32, d.int64)]
    # 0-d is no matrix; empty has its own case
    out += [
        Case(f"primitive/matmul/{lay}", in_layout(_matmul, LAYOUT_FLOATS, lay))
        for lay in SAME_SHAPE
    ]
    return out + [
        Case("primitive/matmul/empty", _empty),
        Case("primitive/matmul/nan-inf", _nan_inf),
    ]
