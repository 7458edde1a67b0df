"""Complex numbers (API 2.4): the four complex primitives (``real``, ``imag``, ``conj``,
``complex``) and complex operands of every primitive the IR takes them in (arithmetic,
``pow``, the trigonometric ones, ``eq``/``ne``, ``where``, ``sum``/``prod``, ``matmul``,
the movement and index primitives, ``cast``),
straight on the backend against NumPy complex128 (each part measured on its own); then
complex arithmetic through the core, forward and backward, against the reference and by
finite differences. Every case is skipped on a device that does not list complex64 and
complex128 in ``backend.dtypes``.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.check import trial
from tensorweaver.check.case import Case, Measure, Skip
from tensorweaver.check.compare import PRIMITIVE_TOLERANCE, measure
from tensorweaver.check.context import Context
from tensorweaver.check.trial import Maker
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

COMPLEX = (d.complex64, d.complex128)
#: The layouts of the elementwise cases: a contiguous matrix and its transposed view.
LAYOUTS = ("standard", "transposed")
Run = Callable[[Context], Iterator[Measure]]


def _require_complex(ctx: Context) -> None:
    missing = [t.name for t in COMPLEX if t not in ctx.dtypes]
    if missing:
        raise Skip(f"{ctx.device} does not list {', '.join(missing)} in its dtypes")


def _values(key: str, name: str, shape: tuple[int, ...], low: float = 0.2) -> np.ndarray:
    """Complex128 host values, parts of magnitude in [low, 2) with random signs, seeded by
    the case and the operand."""
    rng = np.random.default_rng(zlib.crc32(f"{key}/{name}".encode()))
    parts = rng.uniform(low, 2.0, (2, *shape)) * rng.choice([-1.0, 1.0], (2, *shape))
    return parts[0] + 1j * parts[1]


def _put(ctx: Context, values: np.ndarray, dtype: DType, layout: str = "standard") -> Any:
    """``values`` on the device as ``dtype``; ``transposed``: a permuted view of a
    contiguous array holding the transpose."""
    if layout == "standard":
        return ctx.put(values, dtype)
    return ctx.call("permute", ctx.put(np.ascontiguousarray(values.T), dtype), (1, 0))


def _parts(
    ctx: Context, what: str, native: Any, want: np.ndarray, dtype: DType, tolerance: float
) -> Iterator[Measure]:
    """A complex result of ``dtype`` against ``want``: its real and imaginary parts."""
    got = ctx.fetch(native, dtype, what)
    real = dtype.to_real()
    yield measure(f"{what} (real part)", got.real.copy(), want.real, real, tolerance)
    yield measure(f"{what} (imaginary part)", got.imag.copy(), want.imag, real, tolerance)


def _tolerance(dtype: DType, ulps: float = 1.0) -> float:
    return ulps * PRIMITIVE_TOLERANCE[dtype.to_real()]


def _make_complex(dtype: DType) -> Run:
    """``complex(re, im)`` keeps each part exactly, infinities and NaN included."""
    key = f"complex/{dtype.name}"

    def run(ctx: Context) -> Iterator[Measure]:
        _require_complex(ctx)
        z = _values(key, "z", (3, 4))
        z[0, 0], z[0, 1], z[1, 0] = complex(0, np.inf), complex(-np.inf, 1), complex(np.nan, 2)
        real = dtype.to_real()
        out = ctx.call("complex", ctx.put(z.real, real), ctx.put(z.imag, real))
        yield from _parts(ctx, "complex", out, z, dtype, 0.0)
        yield ctx.untouched()

    return run


#: primitive -> (NumPy reference, result is complex, tolerance in units of the dtype's)
UNARY: dict[str, tuple[Callable[[np.ndarray], np.ndarray], bool, float]] = {
    "real": (np.real, False, 0.0),
    "imag": (np.imag, False, 0.0),
    "conj": (np.conj, True, 0.0),
    "neg": (np.negative, True, 0.0),
    "abs": (np.abs, False, 1.0),
    "exp": (np.exp, True, 4.0),
    "log": (np.log, True, 2.0),
    "sqrt": (np.sqrt, True, 2.0),
}
BINARY: dict[str, tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], float]] = {
    "add": (np.add, 1.0),
    "sub": (np.subtract, 1.0),
    "mul": (np.multiply, 2.0),
    "div": (np.true_divide, 4.0),
}


def _unary(name: str, dtype: DType, layout: str) -> Run:
    fn, complex_result, ulps = UNARY[name]
    key = f"{name}/{dtype.name}/{layout}"

    def run(ctx: Context) -> Iterator[Measure]:
        _require_complex(ctx)
        z = _values(key, "z", (3, 4))
        out = ctx.call(name, _put(ctx, z, dtype, layout))
        want = fn(z)
        if complex_result:
            yield from _parts(ctx, name, out, want, dtype, _tolerance(dtype, ulps))
        else:
            yield ctx.check(name, out, want, dtype.to_real(), _tolerance(dtype, ulps))
        yield ctx.untouched()

    return run


def _binary(name: str, dtype: DType, layout: str) -> Run:
    fn, ulps = BINARY[name]
    key = f"{name}/{dtype.name}/{layout}"

    def run(ctx: Context) -> Iterator[Measure]:
        _require_complex(ctx)
        a, b = _values(key, "a", (3, 4)), _values(key, "b", (3, 4))
        out = ctx.call(name, _put(ctx, a, dtype, layout), _put(ctx, b, dtype, layout))
        yield from _parts(ctx, name, out, fn(a, b), dtype, _tolerance(dtype, ulps))
        yield ctx.untouched()

    return run


def _sum(dtype: DType) -> Run:
    key = f"sum/{dtype.name}"

    def run(ctx: Context) -> Iterator[Measure]:
        _require_complex(ctx)
        z = _values(key, "z", (3, 4, 5))
        x = ctx.put(z, dtype)
        tolerance = _tolerance(dtype, 8.0)  # sums of a few terms of size 2
        for axes, keepdims in (((1,), False), ((0, 2), True), ((0, 1, 2), False)):
            out = ctx.call("sum", x, axes, keepdims)
            what = f"sum over {axes}" + (" keeping dims" if keepdims else "")
            yield from _parts(ctx, what, out, z.sum(axis=axes, keepdims=keepdims), dtype, tolerance)
        yield ctx.untouched()

    return run


def _prod(dtype: DType) -> Run:
    key = f"prod/{dtype.name}"

    def run(ctx: Context) -> Iterator[Measure]:
        _require_complex(ctx)
        # near the unit circle: a product of 12 factors stays near 1 in size
        rng = np.random.default_rng(zlib.crc32(key.encode()))
        z = rng.uniform(0.8, 1.25, (2, 3, 2)) * np.exp(1j * rng.uniform(-np.pi, np.pi, (2, 3, 2)))
        x = ctx.put(z, dtype)
        for axes, keepdims in (((1,), False), ((0, 2), True), ((0, 1, 2), False)):
            want = z.prod(axis=axes, keepdims=keepdims)
            what = f"prod over {axes}" + (" keeping dims" if keepdims else "")
            got = ctx.fetch(ctx.call("prod", x, axes, keepdims), dtype, what)
            # one rounding per factor, relative to the product's modulus (a part may cancel)
            tolerance, scale = _tolerance(dtype, 4.0 * z.size), float(np.abs(want).max())
            for part in ("real", "imag"):
                g, w = getattr(got, part).copy(), getattr(want, part)
                yield measure(f"{what} ({part} part)", g, w, dtype.to_real(), tolerance, scale)
        yield ctx.untouched()

    return run


#: Elementwise primitives of the elementwise case: (NumPy reference, tolerance in units).
ELEMENTWISE: dict[str, tuple[Callable[..., np.ndarray], float]] = {
    "sin": (np.sin, 4.0),
    "cos": (np.cos, 4.0),
    "tanh": (np.tanh, 8.0),
    "pow": (np.power, 16.0),
}


def _elementwise(dtype: DType) -> Run:
    """sin, cos, tanh, pow, eq, ne and where of complex operands, one of them a transposed
    view."""
    key = f"elementwise/{dtype.name}"

    def run(ctx: Context) -> Iterator[Measure]:
        _require_complex(ctx)
        a, b = _values(key, "a", (3, 4)), _values(key, "b", (3, 4))
        b[0, :2] = a[0, :2]  # some equal pairs
        a = a.astype(np.complex64 if dtype is d.complex64 else np.complex128)
        b = b.astype(a.dtype)
        x, y = _put(ctx, a, dtype), _put(ctx, b, dtype, "transposed")
        for name, (fn, ulps) in ELEMENTWISE.items():
            operands = (x, y) if name == "pow" else (x,)
            want = fn(*(o.astype(np.complex128) for o in ((a, b) if name == "pow" else (a,))))
            out = ctx.call(name, *operands)
            yield from _parts(ctx, name, out, want, dtype, _tolerance(dtype, ulps))
        yield ctx.check("eq", ctx.call("eq", x, y), a == b, d.bool_)
        yield ctx.check("ne", ctx.call("ne", x, y), a != b, d.bool_)
        cond = np.random.default_rng(zlib.crc32(key.encode())).integers(0, 2, (3, 4)) > 0
        out = ctx.call("where", ctx.put(cond, d.bool_), x, y)
        yield from _parts(ctx, "where", out, np.where(cond, a, b), dtype, 0.0)
        yield ctx.untouched()

    return run


def _index(dtype: DType) -> Run:
    """gather, take, scatter and scatter_add (duplicates accumulate) of complex arrays."""
    key = f"index/{dtype.name}"

    def run(ctx: Context) -> Iterator[Measure]:
        _require_complex(ctx)
        a = _values(key, "a", (3, 4)).astype(np.complex64 if dtype is d.complex64 else complex)
        src = _values(key, "src", (2, 4)).astype(a.dtype)
        x, s = _put(ctx, a, dtype, "transposed"), ctx.put(src, dtype)
        index = np.array([[2, 0, 2, 1], [2, 2, 0, 1]])  # along axis 0, with duplicates
        i = ctx.put(index, d.int64)
        columns = tuple(np.indices(index.shape))[1]
        gathered = ctx.call("gather", x, 0, i)
        yield from _parts(ctx, "gather", gathered, a[index, columns], dtype, 0.0)
        rows = np.array([2, 0, 2])
        out = ctx.call("take", x, 0, ctx.put(rows, d.int64))
        yield from _parts(ctx, "take", out, a[rows], dtype, 0.0)
        want = a.astype(np.complex128)
        np.add.at(want, (index, columns), src)
        out = ctx.call("scatter_add", x, 0, i, s)
        yield from _parts(ctx, "scatter_add", out, want, dtype, _tolerance(dtype, 2.0))
        unique = np.array([[2, 0, 1, 1], [0, 2, 2, 0]])  # no duplicate in any column
        want = a.copy()
        want[unique, columns] = src
        out = ctx.call("scatter", x, 0, ctx.put(unique, d.int64), s)
        yield from _parts(ctx, "scatter", out, want, dtype, 0.0)
        yield ctx.untouched()

    return run


def _movement(dtype: DType) -> Run:
    """full, cat, flip, pad, slice, expand, permute and reshape of complex arrays."""
    key = f"movement/{dtype.name}"

    def run(ctx: Context) -> Iterator[Measure]:
        _require_complex(ctx)
        a = _values(key, "a", (3, 4)).astype(np.complex64 if dtype is d.complex64 else complex)
        b = _values(key, "b", (3, 2)).astype(a.dtype)
        x, y = _put(ctx, a, dtype, "transposed"), ctx.put(b, dtype)
        results = (
            ("full", ctx.call("full", (2, 3), 1.5, dtype), np.full((2, 3), 1.5)),
            ("cat", ctx.call("cat", [x, y], 1), np.concatenate([a, b], 1)),
            ("flip", ctx.call("flip", x, (0, 1)), a[::-1, ::-1]),
            ("pad", ctx.call("pad", x, ((1, 0), (0, 2)), 0.0), np.pad(a, ((1, 0), (0, 2)))),
            ("slice", ctx.call("slice", x, (0, 1), (3, 4), (2, 2)), a[0:3:2, 1:4:2]),
            ("expand", ctx.call("expand", ctx.put(a[:1], dtype), (3, 4)), a[[0, 0, 0]]),
            ("permute", ctx.call("permute", x, (1, 0)), a.T),
            ("reshape", ctx.call("reshape", x, (2, 6)), a.reshape(2, 6)),
        )
        for what, out, want in results:
            yield from _parts(ctx, what, out, want, dtype, 0.0)
        yield ctx.untouched()

    return run


def _matmul(dtype: DType) -> Run:
    key = f"matmul/{dtype.name}"

    def run(ctx: Context) -> Iterator[Measure]:
        _require_complex(ctx)
        a, b = _values(key, "a", (2, 3, 4)), _values(key, "b", (4, 5))
        out = ctx.call("matmul", ctx.put(a, dtype), ctx.put(b, dtype))
        yield from _parts(ctx, "matmul", out, a @ b, dtype, _tolerance(dtype, 16.0))
        yield ctx.untouched()

    return run


#: (source, target) dtypes of the cast case: between the complex dtypes, from real ones,
#: and to real ones (which keep the real part).
CASTS = (
    (d.complex64, d.complex128),
    (d.complex128, d.complex64),
    (d.float32, d.complex64),
    (d.float64, d.complex128),
    (d.int64, d.complex128),
    (d.complex128, d.float64),
    (d.complex64, d.float32),
)


def _cast(ctx: Context) -> Iterator[Measure]:
    _require_complex(ctx)
    for source, target in CASTS:
        if source not in ctx.dtypes:
            continue
        z = _values(f"cast/{source.name}", "z", (3, 4))
        host = z if source.is_complex else np.round(z.real * 4) if source.kind == "i" else z.real
        out = ctx.call("cast", ctx.put(host, source), target)
        what = f"cast {source.name} to {target.name}"
        # The exact value the target can hold of the source's value.
        want = host.astype(np.complex64 if source is d.complex64 else np.complex128)
        if target.is_complex:
            tolerance = 0.0 if target.itemsize >= source.itemsize else _tolerance(target)
            yield from _parts(ctx, what, out, want, target, tolerance)
        else:
            yield ctx.check(what, out, want.real, target, 0.0)
    yield ctx.untouched()


# -- through the core, forward and backward ---------------------------------------------------


def _arithmetic(m: Maker) -> Callable[[], Any]:
    re, im = m.input("re", m.batch(3), 4), m.input("im", m.batch(3), 4)
    b_re = m.input("b_re", 1, 4, low=0.5, high=1.5)
    b_im = m.input("b_im", 1, 4, low=-1.0, high=1.0)

    def forward() -> tuple:
        z, w = tw.complex(re, im), tw.complex(b_re, b_im)
        return (
            tw.view_as_real(z * w + z / w - (1 - 2j)),
            tw.view_as_real((w.conj() * z).exp() + (w * w).log() + w.sqrt()),
            (z * z.conj()).real + z.abs() * w.abs() + tw.angle(w),
        )

    return forward


def _reductions(m: Maker) -> Callable[[], Any]:
    re, im = m.input("re", m.batch(3), 4), m.input("im", m.batch(3), 4)
    b_re, b_im = m.input("b_re", 4, 2), m.input("b_im", 4, 2)

    def forward() -> tuple:
        z, w = tw.complex(re, im), tw.complex(b_re, b_im)
        return (
            tw.view_as_real(z.sum(0, keepdim=True) + z.mean(1, keepdim=True)),
            tw.view_as_real(z @ w),
            z.var(1),
        )

    return forward


CORE: dict[str, Callable[[Maker], Callable[[], Any]]] = {
    "arithmetic": _arithmetic,
    "reductions": _reductions,
}


def _core(key: str, layout: str = "standard") -> Run:
    def run(ctx: Context) -> Iterator[Measure]:
        _require_complex(ctx)
        return trial.compare(ctx, f"complex/{key}", CORE[key], layout=layout)

    return run


def cases() -> list[Case]:
    out = [Case(f"complex/primitive/complex/{t.name}", _make_complex(t)) for t in COMPLEX]
    for name in UNARY:
        out += [
            Case(f"complex/primitive/{name}/{t.name}/{lay}", _unary(name, t, lay))
            for t in COMPLEX
            for lay in LAYOUTS
        ]
    for name in BINARY:
        out += [
            Case(f"complex/primitive/{name}/{t.name}/{lay}", _binary(name, t, lay))
            for t in COMPLEX
            for lay in LAYOUTS
        ]
    out += [Case(f"complex/primitive/sum/{t.name}", _sum(t)) for t in COMPLEX]
    out += [Case(f"complex/primitive/prod/{t.name}", _prod(t)) for t in COMPLEX]
    out += [Case(f"complex/primitive/matmul/{t.name}", _matmul(t)) for t in COMPLEX]
    for group, make in (("elementwise", _elementwise), ("index", _index), ("movement", _movement)):
        out += [Case(f"complex/primitive/{group}/{t.name}", make(t)) for t in COMPLEX]
    out.append(Case("complex/primitive/cast", _cast))
    for key in CORE:
        out.append(Case(f"complex/{key}", _core(key)))
        out += [Case(f"complex/{key}/{lay}", _core(key, lay)) for lay in trial.LAYOUTS]
    return out
