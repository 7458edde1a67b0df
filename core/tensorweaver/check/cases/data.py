"""Data primitives: host transfer (exact, copying, of every layout), full, arange, the
seeded generator and cast between every pair of dtypes the device has (and from every
layout)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Callable

import numpy as np

from tensorweaver.check.case import Case, Measure
from tensorweaver.check.cases.operands import (
    ALL,
    FLOATS,
    INTS,
    LAYOUT_FLOATS,
    NUMERIC,
    in_layout,
    inf,
    nan,
    operand,
    standard,
)
from tensorweaver.check.compare import host_dtype, measure, widen
from tensorweaver.check.context import Context
from tensorweaver.check.layouts import EDGE
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

INF = float("inf")


def _verdict(what: str, ok: bool, detail: str) -> Measure:
    return Measure(what, 0.0 if ok else INF, 0.0, detail)


def _transfer(dtype: DType) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        h = standard(dtype)
        yield ctx.check("from_host then to_host", ctx.put(h, dtype), h, dtype, 0.0)
        strided = h.T[::2]  # a host array that is not C-contiguous
        yield ctx.check(
            "from_host of a strided array", ctx.put(strided, dtype), strided, dtype, 0.0
        )
        wide = widen(h)  # another host dtype: from_host casts it
        yield ctx.check("from_host casting", ctx.call("from_host", wide, dtype), h, dtype, 0.0)
        for what, values in (("0-d", h[1, 1]), ("empty", h[:0])):
            yield ctx.check(f"from_host of {what}", ctx.put(values, dtype), values, dtype, 0.0)

    return run


def _copies(ctx: Context) -> Iterator[Measure]:
    h = np.arange(6.0).reshape(2, 3)
    x = ctx.call("from_host", h, d.float64)
    h[0, 0] = 99.0  # must not reach x: from_host copies
    yield ctx.check("from_host copies its input", x, np.arange(6.0).reshape(2, 3), d.float64, 0.0)
    out = ctx.fetch(x, d.float64, "to_host")
    out[0, 1] = -99.0  # must not reach x: to_host copies
    yield ctx.check("to_host returns a copy", x, np.arange(6.0).reshape(2, 3), d.float64, 0.0)


def _fetch(dtype: DType, layout: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a, x = operand(ctx, dtype, "a", layout)
        yield ctx.check(f"to_host of a {layout} array", x, a, dtype, 0.0)

    return run


def _fill_value(dtype: DType) -> list:
    if dtype is d.bool_:
        return [True, False]
    if dtype in INTS:
        return [5, 0] if dtype is d.uint8 else [-3, 7]
    return [-1.5, nan, inf]


def _full(dtype: DType) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        ctx.require(dtype)
        for value in _fill_value(dtype):
            for shape in ((2, 3), (), (0, 3)):
                out = ctx.call("full", shape, value, dtype)
                want = np.full(shape, value, np.float64 if dtype.is_floating_point else None)
                yield ctx.check(f"full({shape}, {value})", out, want, dtype, 0.0)

    return run


def _arange(dtype: DType) -> Callable[[Context], Iterator[Measure]]:
    if dtype.is_floating_point:
        ranges = [(-1.0, 1.5, 0.25), (2.0, -1.0, -0.5), (0.0, 0.0, 1.0)]
    elif dtype is d.uint8:
        ranges = [(1, 9, 3), (8, 1, -2), (3, 3, 1)]
    else:
        ranges = [(-3, 7, 2), (5, -1, -2), (0, 0, 1)]

    def run(ctx: Context) -> Iterator[Measure]:
        ctx.require(dtype)
        for start, stop, step in ranges:
            want = np.arange(
                start, stop, step, dtype=np.float64 if dtype.is_floating_point else np.int64
            )
            out = ctx.call("arange", start, stop, step, dtype)
            yield ctx.check(f"arange({start}, {stop}, {step})", out, want, dtype, 0.0)

    return run


N = 4096


def _same_after_seed(ctx: Context, draw: Callable[[], object], dtype: DType, what: str) -> Measure:
    ctx.call("seed", 1234)
    first = ctx.fetch(draw(), dtype, what)
    ctx.call("seed", 1234)
    again = ctx.fetch(draw(), dtype, what)
    same = first.shape == again.shape and bool(np.all(first == again))
    return _verdict(f"{what} after seed", same, "the same seed gave different samples")


def _uniform(dtype: DType) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        ctx.require(dtype)
        draw = lambda: ctx.call("random_uniform", (N,), -2.0, 3.0, dtype)  # noqa: E731
        yield _same_after_seed(ctx, draw, dtype, "random_uniform")
        x = widen(ctx.fetch(draw(), dtype, "random_uniform"))
        # 16-bit floats may round a sample just below 3 up to 3
        high_ok = x.max() <= 3.0 if dtype.itemsize == 2 else x.max() < 3.0
        yield _verdict(
            "random_uniform",
            x.min() >= -2.0 and high_ok,
            f"samples in [{x.min()}, {x.max()}], expected [-2, 3)",
        )
        sigma = 5.0 / np.sqrt(12 * N)  # the standard error of the mean
        yield _verdict(
            "random_uniform", abs(x.mean() - 0.5) < 6 * sigma, f"mean {x.mean():.4f}, expected 0.5"
        )

    return run


def _normal(dtype: DType) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        ctx.require(dtype)
        draw = lambda: ctx.call("random_normal", (N,), 1.0, 2.0, dtype)  # noqa: E731
        yield _same_after_seed(ctx, draw, dtype, "random_normal")
        x = widen(ctx.fetch(draw(), dtype, "random_normal"))
        ok = abs(x.mean() - 1.0) < 6 * 2.0 / np.sqrt(N) and abs(x.std() - 2.0) < 0.15
        yield _verdict(
            "random_normal", ok, f"mean {x.mean():.3f}, std {x.std():.3f}; expected 1, 2"
        )

    return run


def _integers(dtype: DType) -> Callable[[Context], Iterator[Measure]]:
    low = 0 if dtype is d.uint8 else -2

    def run(ctx: Context) -> Iterator[Measure]:
        ctx.require(dtype)
        draw = lambda: ctx.call("random_integers", (N,), low, 5, dtype)  # noqa: E731
        yield _same_after_seed(ctx, draw, dtype, "random_integers")
        x = ctx.fetch(draw(), dtype, "random_integers")
        seen = sorted(set(x.tolist()))
        yield _verdict(
            "random_integers",
            seen == list(range(low, 5)),
            f"drew {seen}, expected each of [{low}, 5)",
        )

    return run


def _cast(source: DType, layout: str = "standard") -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        a, x = operand(ctx, source, "a", layout)
        wide = widen(a)
        for target in (t for t in ALL if t in ctx.dtypes):
            out = ctx.fetch(ctx.call("cast", x, target), target, f"cast to {target.name}")
            what = f"cast {source.name} to {target.name}"
            if target is d.bool_:
                yield measure(what, out, wide != 0, target)
            elif target.is_floating_point:
                yield measure(what, out, wide.astype(np.float64), target)
            else:  # truncation toward zero; NaN, inf and out-of-range values are undefined
                info = np.iinfo(host_dtype(target))
                with np.errstate(all="ignore"):
                    want = np.trunc(wide.astype(np.float64))
                    valid = np.isfinite(want) & (want >= info.min) & (want <= info.max)
                yield measure(
                    what, out, np.where(valid, want, 0).astype(np.int64), target, mask=valid
                )
        yield ctx.untouched()

    return run


def cases() -> list[Case]:
    out = [Case(f"primitive/from_host/{t.name}", _transfer(t)) for t in ALL]
    out.append(Case("primitive/to_host/copies", _copies))
    kinds = (*LAYOUT_FLOATS, d.int64, d.bool_)
    out += [Case(f"primitive/to_host/{lay}", in_layout(_fetch, kinds, lay)) for lay in EDGE]
    out += [Case(f"primitive/full/{t.name}", _full(t)) for t in ALL]
    out += [Case(f"primitive/arange/{t.name}", _arange(t)) for t in NUMERIC]
    out += [Case(f"primitive/random_uniform/{t.name}", _uniform(t)) for t in FLOATS]
    out += [Case(f"primitive/random_normal/{t.name}", _normal(t)) for t in FLOATS]
    out += [Case(f"primitive/random_integers/{t.name}", _integers(t)) for t in INTS]
    out += [Case(f"primitive/cast/{t.name}", _cast(t)) for t in ALL]
    out += [Case(f"primitive/cast/{lay}", in_layout(_cast, LAYOUT_FLOATS, lay)) for lay in EDGE]
    return out
