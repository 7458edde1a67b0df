"""Index primitives: gather and take on every dtype, scatter (one of the duplicate writes
wins), scatter_add (duplicates accumulate, NaN and inf propagate) and nonzero; each with
every array argument (operand, index, source) in every layout that has an axis."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any, Callable

import numpy as np

from tensorweaver.check.case import Case, Measure
from tensorweaver.check.cases.operands import (
    ALL,
    FLOATS,
    INTS,
    LAYOUT_FLOATS,
    in_layout,
    inf,
    nan,
    operand,
)
from tensorweaver.check.compare import PRIMITIVE_TOLERANCE, measure, to_dtype, widen
from tensorweaver.check.context import Context
from tensorweaver.check.layouts import EDGE, SAME_SHAPE, arrange
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

#: Index arrays for a (3, 4) operand, by axis: repeats within a row, and shorter than the
#: operand along every axis (the result, or the writes, follow the index's shape).
INDEX = {1: [[3, 0, 3], [1, 1, 2]], 0: [[2, 0, 2], [2, 2, 0]]}
#: 1-d index arrays for take, by axis.
PICKS = {0: [2, 0, 1, 1], 1: [2, 1]}
#: The layouts of the index cases, every array argument in one of them (0-d has no axis).
AXIS_LAYOUTS = tuple(lay for lay in EDGE if lay != "0-d")


def along(index: np.ndarray, axis: int) -> tuple:
    """The NumPy fancy index that addresses ``index`` along ``axis`` (index's own shape)."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[axis] = index
    return tuple(grid)


def _gather(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a, x = operand(ctx, dtype, "a", layout)
        for axis, rows in INDEX.items():
            i, index = arrange(ctx, np.array(rows), d.int64, layout)
            out = ctx.call("gather", x, axis, index)
            yield ctx.check(f"gather along {axis}", out, a[along(i, axis)], dtype, 0.0)
        none = np.zeros((a.shape[0], 0), np.int64)
        out = ctx.call("gather", x, 1, ctx.put(none, d.int64))
        yield ctx.check("gather with an empty index", out, a[:, :0], dtype, 0.0)
        yield ctx.untouched()

    return run


def _take(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a, x = operand(ctx, dtype, "a", layout)
        for axis, picks in PICKS.items():
            i, index = arrange(ctx, np.array(picks), d.int64, layout)
            out = ctx.call("take", x, axis, index)
            yield ctx.check(f"take along {axis}", out, np.take(a, i, axis), dtype, 0.0)
        out = ctx.call("take", x, 1, ctx.put(np.zeros(0, np.int64), d.int64))
        yield ctx.check("take with an empty index", out, a[:, :0], dtype, 0.0)
        yield ctx.untouched()

    return run


def _scatter(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a, x = operand(ctx, dtype, "a", layout)
        # row 1 writes column 1 three times: one of the writes wins; row 2 is not written
        i, index = arrange(ctx, np.array([[0, 2, 3], [1, 1, 1]]), d.int64, layout)
        values = np.arange(1, 7).reshape(2, 3)
        src, s = arrange(
            ctx, to_dtype(values % 2 if dtype is d.bool_ else values, dtype), dtype, layout
        )
        got = ctx.fetch(ctx.call("scatter", x, 1, index, s), dtype, "scatter")
        want = a.copy()
        want[along(i, 1)] = src
        writes = np.zeros(a.shape, int)
        np.add.at(writes, along(i, 1), 1)
        yield measure("scatter", got, want, dtype, 0.0, mask=writes <= 1)
        for row, column in zip(*np.nonzero(writes > 1)):
            written = src[row][i[row] == column]
            yield Measure(
                "scatter with duplicate indices",
                0.0 if got[row, column] in written else float("inf"),
                0.0,
                f"wrote {got[row, column]!r} at ({row}, {column}), expected one of "
                f"{written.tolist()}",
            )
        yield ctx.untouched()

    return run


def _scatter_add(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a, x = operand(ctx, dtype, "a", layout)
        for axis, rows in INDEX.items():
            i, index = arrange(ctx, np.array(rows), d.int64, layout)
            shift = 0 if dtype is d.uint8 else 3  # uint8 sums stay non-negative
            values = to_dtype((np.arange(i.size).reshape(i.shape) - shift) * 0.5, dtype)
            src, s = arrange(ctx, values, dtype, layout)
            want = widen(a).copy()
            with np.errstate(all="ignore"):
                np.add.at(want, along(i, axis), widen(src))
            out = ctx.call("scatter_add", x, axis, index, s)
            # up to three additions land on one element: up to three roundings
            tolerance = 3 * PRIMITIVE_TOLERANCE.get(dtype, 0.0)
            yield ctx.check(f"scatter_add along {axis}", out, want, dtype, tolerance)
        yield ctx.untouched()

    return run


def _scatter_add_nan_inf(ctx: Context) -> Iterator[Measure]:
    x = ctx.put(np.zeros((1, 4)), d.float64)
    i = ctx.put([[0, 0, 1, 2, 2, 3]], d.int64)
    src = ctx.put([[nan, 1.0, inf, inf, -inf, 2.0]], d.float64)
    out = ctx.call("scatter_add", x, 1, i, src)
    yield ctx.check("scatter_add", out, [[nan, inf, nan, 2.0]], d.float64)
    yield ctx.untouched()


#: label -> (dtype, values): NaN and -0.0 and tiny values, every rank, 0-d and empty
NONZERO: dict[str, tuple[DType, Any]] = {
    "float32": (d.float32, [[0.0, -0.0, nan], [1e-30, 0.0, -2.0]]),
    "int16": (d.int16, [[0, 3, 0, -1], [0, 0, 0, 0], [7, 0, 0, 1]]),
    "bool": (d.bool_, [[[True, False], [False, True]], [[False, False], [True, True]]]),
    "0-d": (d.float64, 2.5),
    "0-d-zero": (d.int32, 0),
    "empty": (d.float32, np.zeros((2, 0))),
    "all-zero": (d.uint8, np.zeros((2, 3))),
}


def _nonzero(
    dtype: DType, layout: str = "standard", *, values: Any
) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a, x = arrange(ctx, to_dtype(values, dtype), dtype, layout)
        coords = [c for c in np.ndindex(a.shape) if a[c] != 0]  # C order; NaN is nonzero
        want = np.array(coords, np.int64).reshape(len(coords), a.ndim)
        yield ctx.check("nonzero", ctx.call("nonzero", x), want, d.int64)
        yield ctx.untouched()

    return run


#: primitive -> (its case, the dtypes of its standard cases)
MAKERS: dict[str, tuple[Callable[[DType, str], Callable], tuple[DType, ...]]] = {
    "gather": (_gather, ALL),
    "take": (_take, ALL),
    # Every dtype the core hands them: index_put/index_add, masked_scatter and the gradients
    # of gather and indexing reach them in the tensor's own dtype, narrow integers included.
    "scatter": (_scatter, ALL),
    "scatter_add": (_scatter_add, (*INTS, *FLOATS)),
}


def cases() -> list[Case]:
    out = []
    for name, (make, dtypes) in MAKERS.items():
        out += [Case(f"primitive/{name}/{t.name}", make(t, "standard")) for t in dtypes]
        out += [
            Case(f"primitive/{name}/{lay}", in_layout(make, LAYOUT_FLOATS, lay))
            for lay in AXIS_LAYOUTS
        ]
    out.append(Case("primitive/scatter_add/nan-inf", _scatter_add_nan_inf))
    out += [Case(f"primitive/nonzero/{k}", _nonzero(t, values=v)) for k, (t, v) in NONZERO.items()]
    # NONZERO has its own empty and 0-d arrays
    nonzero = partial(_nonzero, values=NONZERO["float32"][1])
    out += [
        Case(f"primitive/nonzero/{lay}", in_layout(nonzero, LAYOUT_FLOATS, lay))
        for lay in SAME_SHAPE
    ]
    return out
