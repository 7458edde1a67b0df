"""The optional elementwise and special primitives (API 2.3; those without a gradient:
2.6) and the compositions built on them, through the core, forward and backward, against
the NumPy float64 reference and by finite differences, in the layouts that keep their
shapes and on an empty batch.

A backend need not define these primitives: without a kernel the core computes one on the
host (``ops/host_fallback.py``), and the case must pass all the same. Inputs stay inside
each function's domain and away from its poles, so every gradient is well defined.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import tensorweaver as tw
from tensorweaver.check import trial
from tensorweaver.check.case import Case, Measure
from tensorweaver.check.context import Context
from tensorweaver.check.trial import Maker

Forward = Callable[[], Any]


def _trigonometric(m: Maker) -> Forward:
    x = m.input("x", m.batch(3), 4, low=-0.9, high=0.9)
    y = m.input("y", 1, 4, low=0.5, high=2.0)
    return lambda: (
        x.acos() + x.asin() + x.atan() + x.atanh(),
        x.sinh() * x.cosh() + x.asinh() + (y + 1).acosh(),
        tw.atan2(x, y),
    )


def _gamma(m: Maker) -> Forward:
    x = m.input("x", m.batch(3), 4, low=0.3, high=3.0)
    return lambda: (x.lgamma(), x.digamma(), tw.polygamma(2, x), tw.special.zeta(2.5, x))


def _error(m: Maker) -> Forward:
    x = m.input("x", m.batch(3), 4, low=-0.9, high=0.9)
    return lambda: (
        x.erfinv() + x.erfc(),
        tw.special.erfcx(x * 3) + tw.special.log_ndtr(x * 4) + tw.special.ndtr(x),
        tw.special.ndtri(x * 0.5 + 0.5),
    )


def _bessel(m: Maker) -> Forward:
    x = m.input("x", m.batch(3), 4, low=-3.0, high=3.0)
    return lambda: (x.i0() + tw.special.i1(x), tw.special.i0e(x) + tw.special.i1e(x))


def _compositions(m: Maker) -> Forward:
    x = m.input("x", m.batch(3), 4, low=0.1, high=0.9)
    y = m.input("y", 1, 4, low=0.5, high=2.0)
    return lambda: (
        tw.xlogy(x, y) + tw.special.xlog1py(y, x) + x.logit() + x.sinc() + x.exp2(),
        tw.copysign(y, x - 0.5) + tw.ldexp(x, tw.tensor([1, -1, 2, 0])) + tw.hypot(x, y),
        tw.logaddexp(x, y) + x.deg2rad() + tw.special.entr(x),
    )


#: torch.special's functions without a gradient (API 2.6) -> the interval of their inputs:
#: where PyTorch's own kernels are accurate to 1e-15 (its J and Y lose 1e-8 above 2, its Ai
#: 1e-6 below -2.09), so the torch plugin's kernels meet the reference there.
UNARY_CONSTANTS: dict[str, tuple[float, float]] = {
    "airy_ai": (-2.0, 3.0),
    "bessel_j0": (-2.0, 2.0),
    "bessel_j1": (-2.0, 2.0),
    "bessel_y0": (0.2, 2.0),
    "bessel_y1": (0.2, 2.0),
    "modified_bessel_i0": (-3.0, 3.0),
    "modified_bessel_i1": (-3.0, 3.0),
    "modified_bessel_k0": (0.2, 4.0),
    "modified_bessel_k1": (0.2, 4.0),
    "scaled_modified_bessel_k0": (0.2, 4.0),
    "scaled_modified_bessel_k1": (0.2, 4.0),
    "spherical_bessel_j0": (-4.0, 4.0),
}
#: The orthogonal polynomials (x, n) -> the interval of x (degrees 0 to 5).
POLYNOMIALS: dict[str, tuple[float, float]] = {
    **{
        f"{shifted}chebyshev_polynomial_{kind}": (0.0 if shifted else -1.0, 1.0)
        for shifted in ("", "shifted_")
        for kind in "tuvw"
    },
    "hermite_polynomial_h": (-2.0, 2.0),
    "hermite_polynomial_he": (-2.0, 2.0),
    "laguerre_polynomial_l": (0.0, 3.0),
    "legendre_polynomial_p": (-1.0, 1.0),
}


def _unary_constants(*names: str) -> Callable[[Maker], Forward]:
    """Each of ``names`` (constants: no gradient, as PyTorch's) on inputs in its interval:
    compared, and again through the gradient of ``value * w`` with respect to ``w``."""

    def build(m: Maker) -> Forward:
        xs = [_constant_input(m, f"x{i}", 4, UNARY_CONSTANTS[n]) for i, n in enumerate(names)]
        w = m.input("w", m.batch(3), 4)
        fns = [getattr(tw.special, n) for n in names]
        return lambda: _with_weight([fn(x) for fn, x in zip(fns, xs)], w)

    return build


def _polynomials(*names: str) -> Callable[[Maker], Forward]:
    """Each of ``names`` for the degrees 0 to 5, as :func:`_unary_constants`."""

    def build(m: Maker) -> Forward:
        xs = [_constant_input(m, f"x{i}", 6, POLYNOMIALS[n]) for i, n in enumerate(names)]
        w = m.input("w", m.batch(3), 6)
        n = tw.arange(6, dtype=m.dtype, device=w.device)  # the degrees, broadcast
        fns = [getattr(tw.special, name) for name in names]
        return lambda: _with_weight([fn(x, n) for fn, x in zip(fns, xs)], w)

    return build


def _constant_input(m: Maker, name: str, size: int, interval: tuple) -> Any:
    return m.input(name, m.batch(3), size, low=interval[0], high=interval[1], grad=False)


def _with_weight(values: list, w: Any) -> tuple:
    return (*values, *(value * w for value in values))


#: Cases of one function each, in the standard layout; the groups of them run in every one.
ONE_EACH = {
    **{name: _unary_constants(name) for name in UNARY_CONSTANTS},
    **{name: _polynomials(name) for name in POLYNOMIALS},
}
CASES: dict[str, Callable[[Maker], Forward]] = {
    "trigonometric": _trigonometric,
    "gamma": _gamma,
    "error": _error,
    "bessel": _bessel,
    "compositions": _compositions,
    "constants": _unary_constants(*UNARY_CONSTANTS),
    "polynomials": _polynomials(*POLYNOMIALS),
    **ONE_EACH,
}


def _case(key: str, layout: str = "standard") -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        return trial.compare(ctx, f"special/{key}", CASES[key], layout=layout)

    return run


def cases() -> list[Case]:
    out = []
    for key in CASES:
        out.append(Case(f"special/{key}", _case(key)))
        if key not in ONE_EACH:
            out += [Case(f"special/{key}/{lay}", _case(key, lay)) for lay in trial.LAYOUTS]
    return out
