"""Reductions, arg-reductions, cumsum and the optional aminmax, host_aminmax, argsort and
scatter_reduce: axes and keepdims, exact dtypes, ties, NaN, empty axes, and every array
argument in every layout that has an axis, against NumPy float64."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Callable

import numpy as np

from tensorweaver.check.case import Case, Failure, Measure, Skip
from tensorweaver.check.cases.operands import (
    FLOATS,
    INTS,
    NUMERIC,
    in_layout,
    layout_dtypes,
    nan,
)
from tensorweaver.check.compare import PRIMITIVE_TOLERANCE, host_dtype, measure, to_dtype, widen
from tensorweaver.check.context import Context
from tensorweaver.check.layouts import EDGE, arrange
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

SHAPE = (2, 3, 4)
AXES = (((0,), False), ((1, 2), True), ((0, 1, 2), False))


def sample(dtype: DType, low: int, high: int, seed: int = 7) -> np.ndarray:
    """A (2, 3, 4) host array of ``dtype`` in [low, high]; small integer ranges make ties."""
    rng = np.random.default_rng(seed)
    if dtype is d.bool_:
        return rng.integers(0, 2, SHAPE).astype(bool)
    if dtype.is_floating_point:
        return to_dtype(rng.uniform(low, high, SHAPE), dtype)
    return to_dtype(rng.integers(low, high + 1, SHAPE), dtype)


def _rounding(dtype: DType, terms: int) -> float:
    """Tolerance for a result of ``terms`` roundings: one per term (zero for integers)."""
    return PRIMITIVE_TOLERANCE.get(dtype, 0.0) * terms


#: name -> (NumPy reference(a, axes, keepdims), dtypes, sample range, tolerance is per term)
REDUCTIONS: dict[str, tuple[Callable, tuple[DType, ...], tuple[int, int]]] = {
    # Every integer width, not only the core's int64 accumulator: sum(x, dtype=tw.int8) and
    # the core's own narrow sums (tensordot's size-1 dims) reach the primitive in that dtype.
    "sum": (np.sum, (*FLOATS, *INTS), (-2, 2)),
    "prod": (np.prod, (*FLOATS, *INTS), (-3, 3)),
    "max": (np.max, NUMERIC, (-9, 9)),
    "min": (np.min, NUMERIC, (-9, 9)),
    "any": (np.any, (d.bool_,), (0, 1)),
    "all": (np.all, (d.bool_,), (0, 1)),
}
ROUNDED = frozenset({"sum", "prod"})


def _range(name: str, dtype: DType) -> tuple[int, int]:
    low, high = REDUCTIONS[name][2]
    if name == "prod" and dtype.is_floating_point:
        return (0, 2)  # values near 1 keep products of 24 factors in float16's range
    return (0, high) if dtype is d.uint8 else (low, high)


def _over(axes: tuple[int, ...], shape: tuple[int, ...], identity: bool) -> bool:
    """Whether a reduction over ``axes`` is defined: one without an identity (max, argmax)
    needs a non-empty axis."""
    return identity or all(shape[i] for i in axes)


def _reduce(name: str, dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    fn = REDUCTIONS[name][0]

    def run(ctx: Context) -> Iterator[Measure]:
        a, x = arrange(ctx, sample(dtype, *_range(name, dtype)), dtype, layout)
        for axes, keepdims in AXES:
            if not _over(axes, a.shape, name not in ("max", "min")):
                continue
            terms = int(np.prod([SHAPE[i] for i in axes])) if name in ROUNDED else 0
            want = fn(widen(a), axis=axes, keepdims=keepdims)
            out = ctx.call(name, x, axes, keepdims)
            what = f"{name} over {axes}, keepdims={keepdims}"
            yield ctx.check(what, out, want, dtype, _rounding(dtype, terms) or None)
        yield ctx.untouched()

    return run


def _arg(name: str, dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    fn = np.argmax if name == "argmax" else np.argmin

    def run(ctx: Context) -> Iterator[Measure]:
        # few values: many ties
        a, x = arrange(ctx, sample(dtype, 0 if dtype is d.uint8 else -2, 2), dtype, layout)
        for axis, keepdims in ((0, False), (2, True), (1, False)):
            if not _over((axis,), a.shape, False):
                continue
            want = fn(a, axis=axis, keepdims=keepdims)  # NumPy takes the first of ties
            out = ctx.call(name, x, axis, keepdims)
            yield ctx.check(f"{name} along {axis}, keepdims={keepdims}", out, want, d.int64)
        yield ctx.untouched()

    return run


def _cumsum(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a, x = arrange(ctx, sample(dtype, 0 if dtype is d.uint8 else -2, 2), dtype, layout)
        for axis in (0, 1, 2):
            want = np.cumsum(widen(a), axis=axis)
            tolerance = _rounding(dtype, SHAPE[axis]) or None
            yield ctx.check(
                f"cumsum along {axis}", ctx.call("cumsum", x, axis), want, dtype, tolerance
            )
        yield ctx.untouched()

    return run


def _argsort(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        if not callable(getattr(ctx.backend, "argsort", None)):
            raise Skip(f"{ctx.device} has no argsort (optional: the core sorts on the host)")
        a = sample(dtype, 0 if dtype is d.uint8 else -2, 2)  # few values: ties keep their order
        if dtype.is_floating_point:
            # after every number, whatever its sign bit (a GPU radix sort orders by the bits)
            a[0, 1, :2] = nan
            a[1, 2, 3] = -nan
        a, x = arrange(ctx, a, dtype, layout)
        for axis in (0, 1, 2):
            want = np.argsort(a, axis, kind="stable")
            yield ctx.check(f"argsort along {axis}", ctx.call("argsort", x, axis), want, d.int64)
        yield ctx.untouched()

    return run


#: What the core does without each of the two optional reads of both extremes.
_EXTREMES_WITHOUT = {
    "aminmax": "the core reduces twice",
    "host_aminmax": "the core reads aminmax back with to_host",
}


def _aminmax(name: str, dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        if not callable(getattr(ctx.backend, name, None)):
            raise Skip(f"{ctx.device} has no {name} (optional: {_EXTREMES_WITHOUT[name]})")
        a = sample(dtype, 0 if dtype is d.uint8 else -2, 2)
        if dtype.is_floating_point:
            a[1, 2, 3] = nan  # both extremes NaN
        a, x = arrange(ctx, a, dtype, layout)
        if not a.size:
            raise Skip(f"{name} takes non-empty arrays (the core reads nothing from empty ones)")
        want = np.array((a.min(), a.max()))
        if name == "aminmax":
            yield ctx.check(name, ctx.call(name, x), want, dtype)
        else:
            yield _python_pair(name, ctx.call(name, x), want, dtype)
        yield ctx.untouched()

    return run


def _python_pair(name: str, got: object, want: np.ndarray, dtype: DType) -> Measure:
    """``got``, a tuple of two Python numbers of ``dtype``'s kind (as ``tolist`` gives them),
    measured against ``want``."""
    kind = bool if dtype is d.bool_ else float if dtype.is_floating_point else int
    if type(got) is not tuple or len(got) != 2 or any(type(v) is not kind for v in got):
        raise Failure(name, f"returned {got!r}, not a tuple of two Python {kind.__name__}s")
    return measure(name, np.array(got, host_dtype(dtype)), want, dtype)


def _scatter_reduce(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    ufuncs = {"amax": np.maximum, "amin": np.minimum, "prod": np.multiply}

    def run(ctx: Context) -> Iterator[Measure]:
        if not callable(getattr(ctx.backend, "scatter_reduce", None)):
            raise Skip(f"{ctx.device} has no scatter_reduce (optional: the core sorts and scans)")
        a = sample(dtype, 0 if dtype is d.uint8 else -2, 2)
        src = sample(dtype, 0 if dtype is d.uint8 else -2, 2, seed=8)
        if dtype.is_floating_point:
            src[0, 1, 2] = nan  # propagates into its target
        index = np.random.default_rng(9).integers(0, SHAPE[1], SHAPE)  # duplicates combine
        a, x = arrange(ctx, a, dtype, layout)
        src, s = arrange(ctx, src, dtype, layout)
        index, i = arrange(ctx, index, d.int64, layout)
        for reduce, ufunc in ufuncs.items():
            want = widen(a).copy()
            with np.errstate(all="ignore"):
                ufunc.at(want, _places(index, 1), widen(src))
            out = ctx.call("scatter_reduce", x, 1, i, s, reduce)
            tolerance = _rounding(dtype, 4) if reduce == "prod" else None
            yield ctx.check(f"scatter_reduce {reduce} along 1", out, want, dtype, tolerance or None)
        yield ctx.untouched()

    return run


def _places(index: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """The full coordinates ``index`` names along ``axis`` (the others its own)."""
    places = list(np.indices(index.shape))
    places[axis] = index
    return tuple(places)


def _with_nan(ctx: Context) -> Iterator[Measure]:
    # NaN propagates through every float reduction; the arg-reductions count it as the extreme.
    a = to_dtype([[1.0, nan, -3.0, 2.0], [2.0, -1.0, 0.5, 0.5], [nan, nan, 4.0, -4.0]], d.float32)
    x = ctx.put(a, d.float32)
    with np.errstate(all="ignore"):
        for name in ("sum", "prod", "max", "min"):
            want = REDUCTIONS[name][0](widen(a), axis=(1,), keepdims=False)
            yield ctx.check(name, ctx.call(name, x, (1,), False), want, d.float32, 1e-6)
        for name, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
            yield ctx.check(name, ctx.call(name, x, 1, False), fn(a, axis=1), d.int64)
        yield ctx.check("cumsum", ctx.call("cumsum", x, 1), np.cumsum(widen(a), axis=1), d.float32)


def _empty(ctx: Context) -> Iterator[Measure]:
    f = ctx.put(np.zeros((2, 0, 3)), d.float32)
    b = ctx.put(np.zeros((0, 2), bool), d.bool_)
    i = ctx.put(np.zeros((2, 0), np.int64), d.int64)
    yield ctx.check(
        "sum over an empty axis", ctx.call("sum", f, (1,), False), np.zeros((2, 3)), d.float32
    )
    yield ctx.check(
        "prod over an empty axis", ctx.call("prod", f, (0, 1), True), np.ones((1, 1, 3)), d.float32
    )
    yield ctx.check("sum over an empty axis", ctx.call("sum", i, (1,), False), [0, 0], d.int64)
    yield ctx.check(
        "any over an empty axis", ctx.call("any", b, (0,), False), [False, False], d.bool_
    )
    yield ctx.check(
        "all over an empty axis", ctx.call("all", b, (0,), False), [True, True], d.bool_
    )
    yield ctx.check(
        "max of an empty array", ctx.call("max", f, (2,), False), np.zeros((2, 0)), d.float32
    )
    yield ctx.check(
        "argmax of an empty array", ctx.call("argmax", f, 2, False), np.zeros((2, 0)), d.int64
    )
    yield ctx.check(
        "cumsum of an empty array", ctx.call("cumsum", f, 1), np.zeros((2, 0, 3)), d.float32
    )


#: primitive -> (its case, the dtypes of its standard cases)
MAKERS: dict[str, tuple[Callable[[DType, str], Callable], tuple[DType, ...]]] = {
    **{name: (partial(_reduce, name), dtypes) for name, (_, dtypes, _) in REDUCTIONS.items()},
    "argmax": (partial(_arg, "argmax"), (d.bool_, *NUMERIC)),
    "argmin": (partial(_arg, "argmin"), (d.bool_, *NUMERIC)),
    "cumsum": (_cumsum, (*INTS, *FLOATS)),
}
OPTIONAL_MAKERS = {
    "aminmax": (partial(_aminmax, "aminmax"), (d.bool_, *NUMERIC)),
    "host_aminmax": (partial(_aminmax, "host_aminmax"), (d.bool_, *NUMERIC)),
    "argsort": (_argsort, (d.bool_, *NUMERIC)),
    "scatter_reduce": (_scatter_reduce, NUMERIC),
}
#: Accumulating reductions whose layout cases also run in int8: a backend may widen narrow
#: integers on its own path (cuPyNumeric's sums over several axes do), views included.
NARROW_LAYOUTS = frozenset({"sum", "prod", "cumsum"})
#: Every layout but 0-d, which has no axis to reduce along.
AXIS_LAYOUTS = tuple(lay for lay in EDGE if lay != "0-d")


def cases() -> list[Case]:
    out = []
    for group, makers in (("primitive", MAKERS), ("optional", OPTIONAL_MAKERS)):
        for name, (make, dtypes) in makers.items():
            out += [Case(f"{group}/{name}/{t.name}", make(t, "standard")) for t in dtypes]
            edge = layout_dtypes(dtypes)
            if name in NARROW_LAYOUTS:
                edge += (d.int8,)
            out += [
                Case(f"{group}/{name}/{lay}", in_layout(make, edge, lay)) for lay in AXIS_LAYOUTS
            ]
    out += [Case("primitive/reduce/nan", _with_nan), Case("primitive/reduce/empty", _empty)]
    return out
