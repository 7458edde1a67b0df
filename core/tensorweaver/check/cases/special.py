"""The optional elementwise and special primitives (API 2.3) and the compositions built on
them, through the core, forward and backward, against the NumPy float64 reference and by
finite differences, in the layouts that keep their shapes and on an empty batch.

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


CASES: dict[str, Callable[[Maker], Forward]] = {
    "trigonometric": _trigonometric,
    "gamma": _gamma,
    "error": _error,
    "bessel": _bessel,
    "compositions": _compositions,
}


def _case(key: str, layout: str = "standard") -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        return trial.compare(ctx, f"special/{key}", CASES[key], layout=layout)

    return run


def cases() -> list[Case]:
    out = []
    for key in CASES:
        out.append(Case(f"special/{key}", _case(key)))
        out += [Case(f"special/{key}/{lay}", _case(key, lay)) for lay in trial.LAYOUTS]
    return out
