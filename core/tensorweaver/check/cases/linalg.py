"""matmul: 2-d and batched with broadcast batch axes, each operand in every layout that
keeps its shape (transposed, stepped, broadcast), empty inner and outer dimensions, and
NaN/inf propagation. The optional linalg primitives (API 2.3; tril, triu and eig, 2.4), forward
and backward through tw.linalg against the reference in every layout that keeps the shapes
and on an empty batch: a backend without one runs the core's host code (or the core's mask,
for tril and triu), which must pass too."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.check import trial
from tensorweaver.check.case import Case, Measure, Skip
from tensorweaver.check.cases.operands import (
    ALL,
    FLOATS,
    INTS,
    LAYOUT_FLOATS,
    in_layout,
    inf,
    nan,
    standard,
)
from tensorweaver.check.compare import PRIMITIVE_TOLERANCE, to_dtype, widen
from tensorweaver.check.context import Context
from tensorweaver.check.layouts import SAME_SHAPE, arrange
from tensorweaver.check.trial import Maker
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops.host_fallback import HostFallbackWarning


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


def _conditioned(x: tw.Tensor) -> tw.Tensor:
    """Well-conditioned square matrices made from ``x`` (inside forward: finite differences
    perturb the inputs)."""
    return x + 2 * tw.eye(x.shape[-1])


def _cholesky(m: Maker) -> Callable[[], tuple]:
    a = m.input("a", m.batch(2), 4, 4)

    def forward() -> tuple:
        spd = a @ a.mT + 4 * tw.eye(4)
        low, info = tw.linalg.cholesky_ex(spd)
        return low, tw.cholesky_solve(a, low), info

    return forward


def _solve(m: Maker) -> Callable[[], tuple]:
    x, b = m.input("a", m.batch(2), 4, 4), m.input("b", m.batch(2), 4, 3)

    def forward() -> tuple:
        a = _conditioned(x)
        return (
            tw.linalg.solve(a, b),
            tw.linalg.solve_ex(a, b).info,
            tw.linalg.solve_triangular(a, b, upper=True),
            tw.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
        )

    return forward


def _lu(m: Maker) -> Callable[[], tuple]:
    x, wide = m.input("a", m.batch(2), 4, 4), m.input("w", m.batch(2), 3, 5)

    def forward() -> tuple:
        lu, pivots, info = tw.linalg.lu_factor_ex(_conditioned(x))
        return lu, pivots, info, tw.linalg.lu_factor(wide).LU

    return forward


def _qr(m: Maker) -> Callable[[], tuple]:
    tall, wide = m.input("tall", m.batch(2), 5, 3), m.input("wide", m.batch(2), 3, 4)
    # Q and R up to the signs of Q's columns: compared as Q R and through R^T R
    return lambda: tuple(
        f(*tw.linalg.qr(x))
        for x in (tall, wide)
        for f in (lambda q, r: q @ r.exp(), lambda q, r: r.mT @ r)
    )


def _eigh(m: Maker) -> Callable[[], tuple]:
    a = m.input("a", m.batch(2), 4, 4)

    def forward() -> tuple:
        values, vectors = tw.linalg.eigh(a + a.mT)
        # sign-invariant: V exp(L) V^T
        return values, (vectors * values.exp().unsqueeze(-2)) @ vectors.mT

    return forward


def _eig(m: Maker) -> Callable[[], tuple]:
    a = m.input("a", m.batch(2), 4, 4)
    re, im = m.input("re", m.batch(2), 3, 3), m.input("im", m.batch(2), 3, 3)

    def weighted(x: tw.Tensor) -> tuple:
        """sum_i |V_ki|^2 L_i: invariant under the eigenvectors' phases and the order."""
        values, vectors = tw.linalg.eig(x)
        w = (vectors.abs().square() * values.unsqueeze(-2)).sum(-1)
        return w.real, w.imag

    def forward() -> tuple:
        # Well separated eigenvalues: 0.5 a (discs of radius 1.5) about +-2i, 5 and 8, and
        # 0.5 (re + i im) about 0, 3i and 6
        shift = [[0.0, 2, 0, 0], [-2, 0, 0, 0], [0, 0, 5, 0], [0, 0, 0, 8]]
        real = 0.5 * a + tw.tensor(shift, dtype=a.dtype)
        z = 0.5 * tw.complex(re, im)
        z = z + tw.diag(tw.tensor([0, 3j, 6], dtype=z.dtype))
        squares = tw.linalg.eigvals(z).square().sum(-1)  # in any order
        return (*weighted(real), *weighted(z), squares.real, squares.imag)

    return forward


def _svd(m: Maker) -> Callable[[], tuple]:
    tall, wide = m.input("tall", m.batch(2), 5, 3), m.input("wide", m.batch(2), 3, 4)

    def rebuild(x: tw.Tensor) -> tw.Tensor:
        u, s, vh = tw.linalg.svd(x, full_matrices=False)
        return (u * s.exp().unsqueeze(-2)) @ vh  # sign-invariant

    return lambda: (rebuild(tall), rebuild(wide), tw.linalg.svdvals(tall))


def _det(m: Maker) -> Callable[[], tuple]:
    x = m.input("a", m.batch(2), 3, 3)

    def forward() -> tuple:
        a = _conditioned(x)
        return tw.linalg.det(a), tw.linalg.slogdet(a).logabsdet, tw.linalg.slogdet(a).sign

    return forward


def _triangles(m: Maker) -> Callable[[], tuple]:
    x = m.input("a", m.batch(2), 4, 5)
    return lambda: tuple(f(x, k) for f in (tw.tril, tw.triu) for k in (-1, 0, 2))


def _triangle_dtypes(ctx: Context) -> Iterator[Measure]:
    """The optional tril and triu straight on the backend, in every dtype it lists ("any
    dtype": tw.tril of an int or bool mask reaches them), on a batch and a transposed view;
    the tw.linalg case covers floats through the core."""
    if not all(callable(getattr(ctx.backend, n, None)) for n in ("tril", "triu")):
        raise Skip(f"{ctx.device} has no tril/triu (optional: the core masks)")
    for dtype in (t for t in ALL if t in ctx.dtypes):
        h = np.stack([standard(dtype, "a"), standard(dtype, "b")])  # (2, 3, 4)
        for layout in ("standard", "transposed"):
            a, x = arrange(ctx, h, dtype, layout)
            for name in ("tril", "triu"):
                for k in (-1, 0, 2):
                    want = getattr(np, name)(widen(a), k)
                    what = f"{name}(k={k}) [{dtype.name}, {layout}]"
                    yield ctx.check(what, ctx.call(name, x, k), want, dtype, 0.0)
    yield ctx.untouched()


#: tw.linalg cases: name -> what they run (each reaches the optional primitives named)
LINALG_CASES: dict[str, Callable[[Maker], Callable[[], tuple]]] = {
    "triangles": _triangles,  # tril, triu
    "cholesky": _cholesky,  # linalg_cholesky_ex, linalg_solve_triangular
    "solve": _solve,  # linalg_solve_ex, linalg_solve_triangular
    "lu": _lu,  # linalg_lu_factor_ex
    "qr": _qr,  # linalg_qr
    "eigh": _eigh,  # linalg_eigh
    "eig": _eig,  # linalg_eig, linalg_solve_ex (complex); needs complex dtypes
    "svd": _svd,  # linalg_svd
    "det": _det,  # linalg_det, linalg_slogdet
}


def _linalg(key: str, layout: str = "standard") -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        if key == "eig" and not all(t in ctx.dtypes for t in d.COMPLEX):
            raise Skip(f"{ctx.device} does not list complex64 and complex128: eig's are complex")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HostFallbackWarning)  # the fallback is under test
            yield from trial.compare(ctx, f"linalg/{key}", LINALG_CASES[key], layout=layout)

    return run


def cases() -> list[Case]:
    # every integer width: torch's CPU matmul takes them all (bool it refuses)
    out = [Case(f"primitive/matmul/{t.name}", _matmul(t)) for t in (*FLOATS, *INTS)]
    for key in LINALG_CASES:
        out.append(Case(f"linalg/{key}", _linalg(key)))
        out += [Case(f"linalg/{key}/{lay}", _linalg(key, lay)) for lay in trial.LAYOUTS]
    # 0-d is no matrix; empty has its own case
    out += [
        Case(f"primitive/matmul/{lay}", in_layout(_matmul, LAYOUT_FLOATS, lay))
        for lay in SAME_SHAPE
    ]
    return out + [
        Case("optional/triangles/dtypes", _triangle_dtypes),
        Case("primitive/matmul/empty", _empty),
        Case("primitive/matmul/nan-inf", _nan_inf),
    ]
