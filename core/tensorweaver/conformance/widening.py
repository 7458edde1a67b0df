"""Every primitive in every dtype it admits, each in every layout a user can hand a backend.

``tw check``'s layout cases run in float32/float64 (or int32/bool); here each primitive runs
in each dtype the IR admits it in, complex64/complex128 included where the device lists
them, on a (2, 3, 2, 2) operand in every layout of :mod:`tensorweaver.check.layouts` and in
these further ones, the views made with the backend's own primitives as the core makes them
(extreme values, see :func:`values`, in a few layouts):

* ``flipped``: ``flip`` of ``from_host`` of the values reversed on every axis: a view with
  negative strides where a backend's ``flip`` returns one (NumPy's backend copies, as
  ``torch.flip`` does, since the core refuses negative strides from ``tw.from_numpy``).
* ``flipped-stepped``: ``slice`` with step 2 of a ``flip``: a negative stride of two.
* ``broadcast-last``: ``expand`` of the last axis' first column: stride 0 on the innermost
  axis (the first element of each row repeated).
* ``channels-last``: ``permute(x, (0, 3, 1, 2))`` of an (N, H, W, C) contiguous array, as
  ``x.to(memory_format=torch.channels_last)`` lays out an (N, C, H, W) one.
* ``long``: the operand repeated 8 times along axis 0 (192 elements), so that a backend's
  vectorised loops run as well as their tails (torch's switch at 8 or 16 elements).
* ``host-fortran``, ``host-stepped``, ``host-broadcast``: a NumPy array in Fortran order,
  a stepped NumPy view and a read-only ``numpy.broadcast_to`` (stride 0) as
  ``tw.from_numpy`` hands them on: through ``wrap_host`` where the backend shares memory
  with the host (the array itself, strides and all), else through ``from_host``.

One case per primitive and dtype, ``widening/<primitive>/<dtype>``, each measure naming
its layout; references are NumPy float64 (int64 for integers, exact), complex results
compared part by part.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from tensorweaver.check.case import Case, Measure
from tensorweaver.check.cases import complex as complex_cases
from tensorweaver.check.cases.elementwise import BINARY, BOOL_RESULT, UNARY, reference
from tensorweaver.check.cases.operands import ALL, FLOATS, INTS, NUMERIC, standard
from tensorweaver.check.cases.reduce import sample
from tensorweaver.check.compare import PRIMITIVE_TOLERANCE, host_dtype, measure, to_dtype, widen
from tensorweaver.check.context import Context
from tensorweaver.check.layouts import EDGE, arrange
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

SHAPE = (2, 3, 2, 2)
COMPLEX = (d.complex64, d.complex128)
#: The layouts :mod:`tensorweaver.check.layouts` does not make.
MORE = ("flipped", "flipped-stepped", "broadcast-last", "channels-last", "long")
HOST = ("host-fortran", "host-stepped", "host-broadcast")
LAYOUTS = ("standard", *EDGE, *MORE, *HOST)
#: The layouts extreme values run in: their point is the values, the others' the layouts.
EXTREME_LAYOUTS = ("standard", "transposed", "0-d", "long")
#: Layouts with an axis (every one but 0-d), for the primitives that act along one.
AXIS_LAYOUTS = tuple(lay for lay in LAYOUTS if lay != "0-d")


def _flipped(ctx: Context, h: np.ndarray, dtype: DType) -> Any:
    axes = tuple(range(h.ndim))
    return ctx.call("flip", ctx.put(np.ascontiguousarray(np.flip(h)), dtype), axes)


def _flipped_stepped(ctx: Context, h: np.ndarray, dtype: DType) -> Any:
    big = np.full(tuple(2 * n + 1 for n in h.shape), 1 if h.dtype == bool else 77, h.dtype)
    big[(slice(1, None, 2),) * h.ndim] = h
    flipped = _flipped(ctx, big, dtype)
    return ctx.call("slice", flipped, (1,) * h.ndim, big.shape, (2,) * h.ndim)


def _channels_last(ctx: Context, h: np.ndarray, dtype: DType) -> Any:
    nhwc = np.ascontiguousarray(h.transpose(0, 2, 3, 1))
    return ctx.call("permute", ctx.put(nhwc, dtype), (0, 3, 1, 2))


def _host_view(h: np.ndarray, layout: str) -> np.ndarray:
    """``h``'s values in a NumPy array of ``layout``'s strides."""
    if layout == "host-fortran":
        return np.asfortranarray(h)
    if layout == "host-broadcast":
        return np.broadcast_to(h[:1], h.shape)
    big = np.zeros(tuple(2 * n + 1 for n in h.shape), h.dtype)
    big[(slice(1, None, 2),) * h.ndim] = h
    return big[(slice(1, None, 2),) * h.ndim]


def _from_numpy(ctx: Context, view: np.ndarray, dtype: DType) -> Any:
    wrap = getattr(ctx.backend, "wrap_host", None)
    # bfloat16 travels as float32: only from_host converts it
    native = wrap(view) if callable(wrap) and dtype.numpy_name == dtype.name else None
    return ctx.call("from_host", view, dtype) if native is None else native


def place(ctx: Context, h: np.ndarray, dtype: DType, layout: str) -> tuple[np.ndarray, Any]:
    """``h`` (of ``dtype``) on the device in ``layout``: (the values it holds, the array).
    A layout that needs more axes than ``h`` has (0-d ``h``, ``channels-last`` of fewer
    than four) gives the standard array."""
    h = np.asarray(h)
    if layout in EDGE or layout == "standard":
        if h.ndim == 0 and layout in ("empty", "0-d"):
            layout = "standard"
        return arrange(ctx, h, dtype, layout)
    if h.ndim == 0 or (layout == "channels-last" and h.ndim != 4):
        return h, ctx.put(h, dtype)
    if layout == "long":
        long = np.concatenate([h] * 8)
        return long, ctx.put(long, dtype)
    if layout in HOST:
        view = _host_view(h, layout)
        return np.array(view), _from_numpy(ctx, view, dtype)
    if layout == "broadcast-last":
        shown = np.broadcast_to(h[..., :1], h.shape).copy()
        return shown, ctx.call("expand", ctx.put(h[..., :1], dtype), h.shape)
    make = {"flipped": _flipped, "flipped-stepped": _flipped_stepped}.get(layout, _channels_last)
    return h, make(ctx, h, dtype)


def _extreme(dtype: DType, which: str) -> np.ndarray:
    """The ends of ``dtype``'s range and values near them (``extreme``), and nonzero
    divisors other than -1 (``extreme-b``): sums and products that wrap around, int64
    values a float64 cannot hold, floats that overflow and subnormals."""
    if dtype.is_floating_point:
        info = np.finfo(np.float32 if dtype is d.bfloat16 else host_dtype(dtype))
        big, tiny, sub = float(info.max), float(info.tiny), float(info.smallest_subnormal)
        if dtype is d.bfloat16:
            big, sub = 3.3e38, 9.2e-41
        pool = [big, -big, tiny, sub, -sub, big / 2, 3 * sub, -tiny, 0.75 * big, 1.5, -2.0]
        if which == "extreme-b":
            pool = [big, 2.0, -big, 0.5, sub, -3.0, tiny, 1.0 / 3, big / 3, -sub, 4.0]
    else:
        info = np.iinfo(host_dtype(dtype))
        lo, hi = int(info.min), int(info.max)
        pool = [lo, hi, lo + 1, hi - 1, 0, 1, hi // 2 + 1, lo // 2 - 1, hi // 3, 2, 3]
        if which == "extreme-b":
            pool = [hi, 2, lo, 3, hi - 1, lo + 1, 7, hi // 2 + 1, 5, lo // 3, 1]
        if dtype is d.int64:
            pool[-2:] = [2**62 + 1, -(2**53) - 1]  # beyond float64's integers
        # divisors: never 0 (the core refuses it), never -1 (min // -1 overflows in C)
        pool = [v for v in pool if lo <= v <= hi and (which == "extreme" or v not in (0, -1))]
    return to_dtype(
        np.resize(np.array(pool, dtype=object), SHAPE).astype(
            np.float64 if dtype.is_floating_point else np.int64
        ),
        dtype,
    )


def _extremes(dtype: DType, layout: str) -> bool:
    """Whether a case in ``dtype`` and ``layout`` also runs on extreme values."""
    return dtype.kind in "iuf" and layout in EXTREME_LAYOUTS


def values(dtype: DType, which: str = "a") -> np.ndarray:
    """Operand ``which`` (``a``, ``b``, ``exponents``, ``extreme``, ``extreme-b``) of
    ``dtype``, shaped SHAPE.

    Real dtypes: the kit's standard operands and their rows reversed, so the pairs keep
    their relations (uint8's b <= a) and their NaN, infinities and signed zeros. Complex:
    finite parts of magnitude in [0.2, 2) with random signs."""
    if which.startswith("extreme"):
        return _extreme(dtype, which)
    if dtype.is_complex:
        rng = np.random.default_rng(zlib.crc32(f"widening/{which}".encode()))
        parts = rng.uniform(0.2, 2.0, (2, *SHAPE)) * rng.choice([-1.0, 1.0], (2, *SHAPE))
        return (parts[0] + 1j * parts[1]).astype(host_dtype(dtype))
    two = standard(dtype, which)
    return np.stack([two, two[::-1]]).reshape(SHAPE)


def compare(
    ctx: Context, what: str, native: Any, want: Any, dtype: DType, tolerance: float | None = None
) -> Iterator[Measure]:
    """``native`` (of ``dtype``) against ``want``; a complex one part by part."""
    if not dtype.is_complex:
        yield ctx.check(what, native, want, dtype, tolerance)
        return
    got, want = ctx.fetch(native, dtype, what), np.asarray(want)
    real = dtype.to_real()
    limit = PRIMITIVE_TOLERANCE[real] if tolerance is None else tolerance
    yield measure(f"{what} (real part)", got.real.copy(), want.real, real, limit)
    yield measure(f"{what} (imaginary part)", got.imag.copy(), want.imag, real, limit)


def _ulps(dtype: DType, count: float) -> float | None:
    """``count`` roundings of ``dtype`` (None, the default, for integers and bool)."""
    unit = PRIMITIVE_TOLERANCE.get(dtype.to_real())
    return None if unit is None else count * unit


Run = Callable[[Context, DType, str], Iterator[Measure]]


@dataclass(frozen=True)
class Spec:
    """A primitive's widening: its case body for one dtype and layout, its dtypes, and the
    layouts it takes."""

    run: Run
    dtypes: tuple[DType, ...]
    layouts: tuple[str, ...] = LAYOUTS


# -- elementwise ------------------------------------------------------------------------------


def _unary(name: str) -> Run:
    def run(ctx: Context, dtype: DType, layout: str) -> Iterator[Measure]:
        a, x = place(ctx, values(dtype), dtype, layout)
        if dtype.is_complex:
            if name in complex_cases.UNARY:
                fn, complex_result, ulps = complex_cases.UNARY[name]
            else:  # sin, cos, tanh: complex results
                (fn, ulps), complex_result = complex_cases.ELEMENTWISE[name], True
            out_dtype = dtype if complex_result else dtype.to_real()
            want = fn(a.astype(np.complex128))
            yield from compare(ctx, name, ctx.call(name, x), want, out_dtype, _ulps(dtype, ulps))
            return
        yield ctx.check(name, ctx.call(name, x), reference(UNARY[name][0], a), dtype)
        if _extremes(dtype, layout):
            a, x = place(ctx, values(dtype, "extreme"), dtype, layout)
            want = reference(UNARY[name][0], a)
            yield ctx.check(f"{name} of extreme values", ctx.call(name, x), want, dtype)

    return run


def _pairs(layout: str) -> list[tuple[str, str]]:
    """Both operands in ``layout``, and one beside a standard operand (a 0-d one either
    way round, as the IR allows; empty and long, whose shapes differ, only with their own)."""
    if layout == "0-d":
        return [("0-d", "standard"), ("standard", "0-d")]
    if layout in ("standard", "empty", "long"):
        return [(layout, layout)]
    return [(layout, layout), ("standard", layout)]


def _binary(name: str) -> Run:
    def run(ctx: Context, dtype: DType, layout: str) -> Iterator[Measure]:
        second = "exponents" if name == "pow" and dtype in INTS else "b"
        if dtype.is_complex:  # eq and ne have no entry: their reference is NumPy's
            found = complex_cases.BINARY.get(name) or complex_cases.ELEMENTWISE.get(name)
            fn, ulps = found or (None, 0.0)
        for left, right in _pairs(layout):
            a, x = place(ctx, values(dtype), dtype, left)
            b, y = place(ctx, values(dtype, second), dtype, right)
            what = name if left == right else f"{name} ({left} with {right})"
            out = ctx.call(name, x, y)
            if name in BOOL_RESULT:
                want = reference(BINARY[name][0], a, b)
                yield ctx.check(what, out, want, d.bool_)
            elif dtype.is_complex:
                want = fn(a.astype(np.complex128), b.astype(np.complex128))
                yield from compare(ctx, what, out, want, dtype, _ulps(dtype, ulps))
            else:
                yield ctx.check(what, out, reference(BINARY[name][0], a, b), dtype)
            if _extremes(dtype, layout) and name != "pow":
                a, x = place(ctx, values(dtype, "extreme"), dtype, left)
                b, y = place(ctx, values(dtype, "extreme-b"), dtype, right)
                want = reference(BINARY[name][0], a, b)
                out_dtype = d.bool_ if name in BOOL_RESULT else dtype
                yield ctx.check(f"{what} of extreme values", ctx.call(name, x, y), want, out_dtype)

    return run


def _where(ctx: Context, dtype: DType, layout: str) -> Iterator[Measure]:
    for left, right in _pairs(layout):
        cond, c = place(ctx, values(d.bool_), d.bool_, "standard" if layout == "0-d" else layout)
        a, x = place(ctx, values(dtype), dtype, left)
        b, y = place(ctx, values(dtype, "b"), dtype, right)
        what = "where" if left == right else f"where ({left} with {right})"
        yield from compare(ctx, what, ctx.call("where", c, x, y), np.where(cond, a, b), dtype, 0.0)


# -- reductions -------------------------------------------------------------------------------

AXES = (((1,), False), ((0, 2, 3), True), ((0, 1, 2, 3), False))
#: name -> (NumPy reference, identity exists, sample range)
REDUCTIONS: dict[str, tuple[Callable, bool, tuple[int, int]]] = {
    "sum": (np.sum, True, (-2, 2)),
    "prod": (np.prod, True, (-3, 3)),
    "max": (np.max, False, (-9, 9)),
    "min": (np.min, False, (-9, 9)),
    "any": (np.any, True, (0, 1)),
    "all": (np.all, True, (0, 1)),
}


def _sample(name: str, dtype: DType, low: int, high: int) -> np.ndarray:
    """Reduction operands: the kit's (2, 3, 4) sample reshaped; complex ones near the unit
    circle, so that products of 24 factors stay near 1 in size."""
    if dtype.is_complex:
        rng = np.random.default_rng(zlib.crc32(f"widening/{name}".encode()))
        z = rng.uniform(0.8, 1.25, SHAPE) * np.exp(1j * rng.uniform(-np.pi, np.pi, SHAPE))
        return z.astype(host_dtype(dtype))
    if name == "prod" and dtype.is_floating_point:
        low, high = 0, 2  # float16 keeps a product of 24 such factors
    if dtype is d.uint8:
        low = 0
    return sample(dtype, low, high).reshape(SHAPE)


def _inputs(
    name: str, dtype: DType, layout: str, low: int, high: int
) -> list[tuple[str, np.ndarray]]:
    """A reduction's operands: the sample; integers' extremes (sums and products wrap
    around), floats' too where the order of the terms cannot matter (max, min, argmax,
    argmin); floats with NaN among them."""
    found = [("", _sample(name, dtype, low, high))]
    if _extremes(dtype, layout) and (
        dtype.kind in "iu" or name in ("max", "min", "argmax", "argmin")
    ):
        found.append((" of extreme values", values(dtype, "extreme")))
    if dtype.is_floating_point:
        with_nan = found[0][1].copy()
        with_nan.reshape(-1)[[1, 10, 17]] = np.nan
        found.append((" with NaN", with_nan))
    return found


def _reduce(name: str) -> Run:
    low, high = REDUCTIONS[name][2]

    def run(ctx: Context, dtype: DType, layout: str) -> Iterator[Measure]:
        for label, host in _inputs(name, dtype, layout, low, high):
            yield from _reduced(ctx, name, label, host, dtype, layout)

    return run


def _reduced(
    ctx: Context, name: str, label: str, host: np.ndarray, dtype: DType, layout: str
) -> Iterator[Measure]:
    fn, identity, _ = REDUCTIONS[name]
    a, x = place(ctx, host, dtype, layout)
    wide = a.astype(np.complex128) if dtype.is_complex else widen(a)
    with np.errstate(all="ignore"):
        for axes, keepdims in AXES:
            if not identity and not all(a.shape[i] for i in axes):
                continue
            terms = int(np.prod([a.shape[i] for i in axes]))
            what = f"{name}{label} over {axes}, keepdims={keepdims}"
            want = fn(wide, axis=axes, keepdims=keepdims)
            out = ctx.call(name, x, axes, keepdims)
            tolerance = _ulps(dtype, 2 * terms if name in ("sum", "prod") else 0)
            yield from compare(ctx, what, out, want, dtype, tolerance or None)


def _arg(name: str) -> Run:
    fn = np.argmax if name == "argmax" else np.argmin

    def run(ctx: Context, dtype: DType, layout: str) -> Iterator[Measure]:
        for label, host in _inputs(name, dtype, layout, -2, 2):  # few values: ties
            a, x = place(ctx, host, dtype, layout)
            for axis, keepdims in ((1, False), (3, True)):
                if not a.shape[axis] or not a.size:
                    continue
                want = fn(a, axis=axis, keepdims=keepdims)
                out = ctx.call(name, x, axis, keepdims)
                what = f"{name}{label} along {axis}, keepdims={keepdims}"
                yield ctx.check(what, out, want, d.int64)

    return run


def _cumsum(ctx: Context, dtype: DType, layout: str) -> Iterator[Measure]:
    for label, host in _inputs("cumsum", dtype, layout, -2, 2):
        a, x = place(ctx, host, dtype, layout)
        for axis in (1, 3):
            with np.errstate(all="ignore"):
                want = np.cumsum(widen(a), axis=axis)
            out = ctx.call("cumsum", x, axis)
            tolerance = _ulps(dtype, 2 * SHAPE[axis])
            yield ctx.check(f"cumsum{label} along {axis}", out, want, dtype, tolerance)


# -- movement, index, matmul, cast, to_host ---------------------------------------------------


def _movement(ctx: Context, dtype: DType, layout: str) -> Iterator[Measure]:
    h, x = place(ctx, values(dtype), dtype, layout)
    n = h.ndim
    results = [
        ("reshape", ctx.call("reshape", x, (h.size,)), h.reshape(h.size)),
        ("permute", ctx.call("permute", x, tuple(reversed(range(n)))), h.transpose()),
        ("expand", ctx.call("expand", ctx.call("reshape", x, (1, *h.shape)), (2, *h.shape)),
         np.broadcast_to(h, (2, *h.shape))),
        ("flip", ctx.call("flip", x, tuple(range(n))), np.flip(h)),
    ]  # fmt: skip
    if n:
        starts = tuple(min(1, k) for k in h.shape)
        want = h[tuple(slice(s, None, 2) for s in starts)]
        results.append(("slice", ctx.call("slice", x, starts, h.shape, (2,) * n), want))
        widths = tuple((1, 0) if i % 2 else (0, 2) for i in range(n))
        pad_value = True if dtype is d.bool_ else 7
        want = np.pad(h, widths, constant_values=pad_value)
        results.append(("pad", ctx.call("pad", x, widths, pad_value), want))
        axis = n - 1
        results.append(("cat", ctx.call("cat", [x, x], axis), np.concatenate([h, h], axis)))
    for what, out, want in results:
        yield from compare(ctx, f"{what} of a {layout} array", out, want, dtype, 0.0)


def _index_values(which: str) -> np.ndarray:
    """Index arrays for axis 1 (size 3) of SHAPE: ``unique`` has no repeat along it,
    ``repeats`` has."""
    i, _, k, m = np.indices((2, 2, 2, 2))
    if which == "unique":
        return (i + k + m + np.arange(2).reshape(1, 2, 1, 1)) % 3
    return np.array([2, 0, 2, 2, 1, 2, 0, 0] * 2).reshape(2, 2, 2, 2)


def _along(index: np.ndarray, axis: int) -> tuple:
    """The NumPy index that addresses ``index`` along ``axis`` (the others its own)."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[axis] = index
    return tuple(grid)


def _source(dtype: DType) -> np.ndarray:
    """The values scatter and scatter_add write: shaped as the index arrays."""
    if dtype.is_complex:
        return values(dtype, "b")[:, :2]
    n = np.arange(16).reshape(2, 2, 2, 2)
    if dtype is d.bool_:
        return n % 2 == 1
    return to_dtype(n if dtype is d.uint8 else (n - 5) * 0.5, dtype)


def _index(ctx: Context, dtype: DType, layout: str) -> Iterator[Measure]:
    h, x = place(ctx, values(dtype), dtype, layout)
    for name in ("gather", "scatter", "scatter_add"):
        if name == "scatter_add" and dtype is d.bool_:
            continue
        which = "unique" if name == "scatter" else "repeats"
        i, index = place(ctx, _index_values(which), d.int64, layout)
        if name == "gather":
            out = ctx.call("gather", x, 1, index)
            yield from compare(ctx, f"gather of a {layout} array", out, h[_along(i, 1)], dtype, 0.0)
            continue
        src, s = place(ctx, _source(dtype), dtype, layout)
        wide = h.astype(np.complex128) if dtype.is_complex else widen(h)
        want = wide.copy()
        if name == "scatter":
            want[_along(i, 1)] = src
        else:
            with np.errstate(all="ignore"):
                np.add.at(want, _along(i, 1), src.astype(wide.dtype))
        out = ctx.call(name, x, 1, index, s)
        tolerance = 0.0 if name == "scatter" else _ulps(dtype, 4)
        yield from compare(ctx, f"{name} of a {layout} array", out, want, dtype, tolerance)
    picks = np.array([2, 0, 2])
    out = ctx.call("take", x, 1, ctx.put(picks, d.int64))
    yield from compare(ctx, f"take of a {layout} array", out, np.take(h, picks, 1), dtype, 0.0)
    if dtype.kind in "iu" and _extremes(dtype, layout):
        yield from _scatter_add_extremes(ctx, dtype, layout)


def _scatter_add_extremes(ctx: Context, dtype: DType, layout: str) -> Iterator[Measure]:
    """Integer sums at duplicate indices that wrap around, int64 beyond float64's."""
    h, x = place(ctx, values(dtype, "extreme"), dtype, layout)
    i, index = place(ctx, _index_values("repeats"), d.int64, layout)
    src, s = place(ctx, values(dtype, "extreme-b")[:, :2], dtype, layout)
    want = widen(h).copy()
    np.add.at(want, _along(i, 1), widen(src))
    out = ctx.call("scatter_add", x, 1, index, s)
    yield ctx.check(f"scatter_add of extreme values of a {layout} array", out, want, dtype)


def _nonzero(ctx: Context, dtype: DType, layout: str) -> Iterator[Measure]:
    h, x = place(ctx, values(dtype), dtype, layout)
    coords = [c for c in np.ndindex(h.shape) if h[c] != 0]
    want = np.array(coords, np.int64).reshape(len(coords), h.ndim)
    yield ctx.check(f"nonzero of a {layout} array", ctx.call("nonzero", x), want, d.int64)


def _matmul(ctx: Context, dtype: DType, layout: str) -> Iterator[Measure]:
    values_b = values(dtype, "exponents" if dtype in INTS else "b")
    for left, right in _pairs(layout):
        a, x = place(ctx, values(dtype), dtype, left)
        b, y = place(ctx, values_b, dtype, right)
        y = ctx.call("permute", y, (0, 1, 3, 2))
        wide = (lambda v: v.astype(np.complex128)) if dtype.is_complex else widen
        with np.errstate(all="ignore"):
            want = np.matmul(wide(a), wide(b).transpose(0, 1, 3, 2))
        what = f"matmul ({left} @ transposed {right})"
        yield from compare(ctx, what, ctx.call("matmul", x, y), want, dtype, _ulps(dtype, 4))
        if layout == "standard":  # batch axes that broadcast: one of size 1, one missing
            for part in (b[:, :1], b[0]):
                part = np.ascontiguousarray(np.swapaxes(part, -1, -2))
                with np.errstate(all="ignore"):
                    want = np.matmul(wide(a), wide(part))
                out = ctx.call("matmul", x, ctx.put(part, dtype))
                label = f"matmul (batch axes {a.shape[:-2]} with {part.shape[:-2]})"
                yield from compare(ctx, label, out, want, dtype, _ulps(dtype, 4))
        # products and sums that wrap around, int64 beyond float64's integers
        if dtype.kind in "iu" and _extremes(dtype, layout):
            a, x = place(ctx, values(dtype, "extreme"), dtype, left)
            b, y = place(ctx, values(dtype, "extreme-b"), dtype, right)
            out = ctx.call("matmul", x, ctx.call("permute", y, (0, 1, 3, 2)))
            want = np.matmul(widen(a), widen(b).transpose(0, 1, 3, 2))
            yield ctx.check(f"{what} of extreme values", out, want, dtype)


def _cast(ctx: Context, source: DType, layout: str) -> Iterator[Measure]:
    yield from _casts(ctx, source, layout, "a")
    if _extremes(source, layout):
        yield from _casts(ctx, source, layout, "extreme")


def _casts(ctx: Context, source: DType, layout: str, which: str) -> Iterator[Measure]:
    a, x = place(ctx, values(source, which), source, layout)
    wide = a.astype(np.complex128) if source.is_complex else widen(a)
    for target in (t for t in (*ALL, *COMPLEX) if t in ctx.dtypes):
        if source.is_complex and target.kind in "biu":
            continue  # as the complex cast case: complex casts only to floats and complex
        out = ctx.call("cast", x, target)
        what = f"cast {source.name} to {target.name} of a {layout} array"
        if which != "a":
            what += " of extreme values"
        if target.is_complex:
            yield from compare(ctx, what, out, wide.astype(np.complex128), target, _ulps(target, 1))
            continue
        real = wide.real if source.is_complex else wide
        if target is d.bool_:
            yield ctx.check(what, out, real != 0, target)
        elif target.is_floating_point:
            yield ctx.check(what, out, real.astype(np.float64), target)
        else:  # toward zero; NaN, inf and out-of-range values are undefined
            info = np.iinfo(host_dtype(target))
            with np.errstate(all="ignore"):
                # integers exactly (int64 beyond float64's integers), floats truncated
                want = real if real.dtype.kind in "biu" else np.trunc(real.astype(np.float64))
                valid = np.isfinite(want) & (want >= info.min) & (want <= info.max)
            got = ctx.fetch(out, target, what)
            yield measure(what, got, np.where(valid, want, 0).astype(np.int64), target, mask=valid)


def _to_host(ctx: Context, dtype: DType, layout: str) -> Iterator[Measure]:
    h, x = place(ctx, values(dtype), dtype, layout)
    yield from compare(ctx, f"to_host of a {layout} array", x, h, dtype, 0.0)


# -- the table --------------------------------------------------------------------------------


def _complex_in(name: str) -> tuple[DType, ...]:
    known = {*complex_cases.UNARY, *complex_cases.BINARY, *complex_cases.ELEMENTWISE}
    return COMPLEX if name in known | {"eq", "ne"} else ()


#: The cases that check several primitives: the primitives each one calls.
GROUPS: dict[str, frozenset[str]] = {
    "movement": frozenset({"reshape", "permute", "expand", "pad", "slice", "flip", "cat"}),
    "index": frozenset({"gather", "take", "scatter", "scatter_add"}),
}
SPECS: dict[str, Spec] = {
    **{n: Spec(_unary(n), (*dt, *_complex_in(n))) for n, (_, dt) in UNARY.items()},
    **{n: Spec(_unary(n), COMPLEX) for n in ("real", "imag", "conj")},
    **{n: Spec(_binary(n), (*dt, *_complex_in(n))) for n, (_, dt) in BINARY.items()},
    "where": Spec(_where, (*ALL, *COMPLEX)),
    "sum": Spec(_reduce("sum"), (*FLOATS, *INTS, *COMPLEX), AXIS_LAYOUTS),
    "prod": Spec(_reduce("prod"), (*FLOATS, *INTS, *COMPLEX), AXIS_LAYOUTS),
    "max": Spec(_reduce("max"), NUMERIC, AXIS_LAYOUTS),
    "min": Spec(_reduce("min"), NUMERIC, AXIS_LAYOUTS),
    "any": Spec(_reduce("any"), (d.bool_,), AXIS_LAYOUTS),
    "all": Spec(_reduce("all"), (d.bool_,), AXIS_LAYOUTS),
    "argmax": Spec(_arg("argmax"), (d.bool_, *NUMERIC), AXIS_LAYOUTS),
    "argmin": Spec(_arg("argmin"), (d.bool_, *NUMERIC), AXIS_LAYOUTS),
    "cumsum": Spec(_cumsum, (*INTS, *FLOATS), AXIS_LAYOUTS),
    "movement": Spec(_movement, (*ALL, *COMPLEX)),
    "index": Spec(_index, (*ALL, *COMPLEX), AXIS_LAYOUTS),
    "nonzero": Spec(_nonzero, ALL),
    "matmul": Spec(_matmul, (*FLOATS, *INTS, *COMPLEX), AXIS_LAYOUTS),
    "cast": Spec(_cast, (*ALL, *COMPLEX)),
    "to_host": Spec(_to_host, (*ALL, *COMPLEX)),
}


def _case(spec: Spec, dtype: DType) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        ctx.require(dtype)
        for layout in spec.layouts:
            for m in spec.run(ctx, dtype, layout):
                yield m if layout in m.what else _labelled(m, layout)
        yield ctx.untouched()

    return run


def _labelled(m: Measure, layout: str) -> Measure:
    return replace(m, what=f"{m.what} [{layout}]")


def cases() -> list[Case]:
    """``widening/<primitive>/<dtype>`` for every primitive and dtype of :data:`SPECS`."""
    return [
        Case(f"widening/{name}/{t.name}", _case(spec, t))
        for name, spec in SPECS.items()
        for t in spec.dtypes
    ]
