"""Index primitives: gather and take on every dtype, scatter (one of the duplicate writes
wins), scatter_add (duplicates accumulate, NaN and inf propagate) and nonzero."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

from tensorweaver.check.case import Case, Measure
from tensorweaver.check.cases.operands import ALL, FLOATS, inf, nan, operand
from tensorweaver.check.compare import PRIMITIVE_TOLERANCE, measure, to_dtype, widen
from tensorweaver.check.context import Context
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

#: Index arrays for a (3, 4) operand, by axis: repeats within a row, and an index shorter
#: than the operand along the axis.
INDEX = {1: [[3, 0, 3], [1, 1, 2], [0, 3, 3]], 0: [[2, 0, 2, 1], [2, 2, 0, 1]]}


def along(index: np.ndarray, axis: int) -> tuple:
    """The NumPy fancy index that addresses ``index`` along ``axis`` (index's own shape)."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[axis] = index
    return tuple(grid)


def _gather(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a, x = operand(ctx, dtype, "a", layout)
        for axis, rows in INDEX.items():
            i = np.array(rows)[: a.shape[0] if axis == 1 else None, : a.shape[1]] % a.shape[axis]
            out = ctx.call("gather", x, axis, ctx.put(i, d.int64))
            yield ctx.check(f"gather along {axis}", out, a[along(i, axis)], dtype, 0.0)
        none = np.zeros((a.shape[0], 0), np.int64)
        out = ctx.call("gather", x, 1, ctx.put(none, d.int64))
        yield ctx.check("gather with an empty index", out, a[:, :0], dtype, 0.0)
        yield ctx.untouched()

    return run


def _take(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a, x = operand(ctx, dtype, "a", layout)
        for axis, picks in ((0, [2, 0, 1, 1]), (1, [2, 1])):
            i = np.array(picks) % a.shape[axis]
            out = ctx.call("take", x, axis, ctx.put(i, d.int64))
            yield ctx.check(f"take along {axis}", out, np.take(a, i, axis), dtype, 0.0)
        out = ctx.call("take", x, 1, ctx.put(np.zeros(0, np.int64), d.int64))
        yield ctx.check("take with an empty index", out, a[:, :0], dtype, 0.0)
        yield ctx.untouched()

    return run


def _scatter(dtype: DType) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a = to_dtype(np.zeros((3, 4)), dtype)
        values = np.arange(1, 10).reshape(3, 3)
        src = to_dtype(values % 2 if dtype is d.bool_ else values, dtype)
        i = np.array([[0, 2, 3], [1, 1, 1], [3, 2, 0]])  # row 1 writes column 1 three times
        got = ctx.fetch(
            ctx.call("scatter", ctx.put(a, dtype), 1, ctx.put(i, d.int64), ctx.put(src, dtype)),
            dtype,
            "scatter",
        )
        want = a.copy()
        want[along(i, 1)] = src
        unique = np.ones((3, 4), bool)
        unique[1, 1] = False
        yield measure("scatter", got, want, dtype, 0.0, mask=unique)
        ok = got[1, 1] in src[1]
        yield Measure(
            "scatter with duplicate indices",
            0.0 if ok else float("inf"),
            0.0,
            f"wrote {got[1, 1]!r}, expected one of {src[1].tolist()}",
        )
        yield ctx.untouched()

    return run


def _scatter_add(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a, x = operand(ctx, dtype, "a", layout)
        for axis, rows in INDEX.items():
            i = np.array(rows)[: a.shape[0] if axis == 1 else None, : a.shape[1]] % a.shape[axis]
            src = to_dtype((np.arange(i.size).reshape(i.shape) - 3) * 0.5, dtype)
            want = widen(a).copy()
            with np.errstate(all="ignore"):
                np.add.at(want, along(i, axis), widen(src))
            out = ctx.call("scatter_add", x, axis, ctx.put(i, d.int64), ctx.put(src, dtype))
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


def _nonzero(dtype: DType, values: Any) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a = to_dtype(values, dtype)
        coords = [c for c in np.ndindex(a.shape) if a[c] != 0]  # C order; NaN is nonzero
        want = np.array(coords, np.int64).reshape(len(coords), a.ndim)
        yield ctx.check("nonzero", ctx.call("nonzero", ctx.put(a, dtype)), want, d.int64)
        yield ctx.untouched()

    return run


def cases() -> list[Case]:
    out = []
    for name, make in (("gather", _gather), ("take", _take)):
        out += [Case(f"primitive/{name}/{t.name}", make(t, "standard")) for t in ALL]
        out.append(Case(f"primitive/{name}/strided", make(d.float32, "strided")))
    out += [Case(f"primitive/scatter/{t.name}", _scatter(t)) for t in (d.bool_, d.int32, *FLOATS)]
    out += [
        Case(f"primitive/scatter_add/{t.name}", _scatter_add(t, "standard"))
        for t in (d.int32, d.int64, *FLOATS)
    ]
    out += [
        Case("primitive/scatter_add/strided", _scatter_add(d.float32, "strided")),
        Case("primitive/scatter_add/nan-inf", _scatter_add_nan_inf),
    ]
    out += [Case(f"primitive/nonzero/{k}", _nonzero(t, v)) for k, (t, v) in NONZERO.items()]
    return out
