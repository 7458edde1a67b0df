"""The optional fft primitives (API 2.4) straight on the backend against numpy.fft in
float64, and tw.fft's transforms through the core, forward and backward, against the
reference in every layout that keeps the shapes and on an empty batch, with finite
differences. Skipped on a device without complex dtypes. A backend without the primitives
runs the core's host code, which the second group checks all the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.check import trial
from tensorweaver.check.case import Case, Measure, Skip
from tensorweaver.check.compare import PRIMITIVE_TOLERANCE
from tensorweaver.check.context import Context
from tensorweaver.check.trial import Maker
from tensorweaver.contract import dtypes as d
from tensorweaver.ops.complex import supports_complex

Forward = Callable[[], Any]

#: case -> (primitive, input is complex, static arguments, numpy.fft's result in float64)
PRIMITIVES: dict[str, tuple[str, bool, tuple, Callable[[np.ndarray], np.ndarray]]] = {
    "fft_c2c": (
        "fft_c2c", True, ((1, 2), "by_root_n", True),
        lambda a: np.fft.fftn(a, axes=(1, 2), norm="ortho"),
    ),
    "fft_c2c/inverse": (
        "fft_c2c", True, ((2,), "none", False),
        lambda a: np.fft.ifft(a, axis=2, norm="forward"),
    ),
    "fft_r2c": (
        "fft_r2c", False, ((2, 1), "by_n", True),
        lambda a: np.fft.rfftn(a, axes=(2, 1), norm="forward"),
    ),
    "fft_r2c/full": ("fft_r2c", False, ((1,), "none", False), lambda a: np.fft.fft(a, axis=1)),
    "fft_c2r": (
        "fft_c2r", True, ((1, 2), "by_n", 7),
        lambda a: np.fft.irfftn(a, s=(4, 7), axes=(1, 2)),
    ),
    "fft_c2r/even": (
        "fft_c2r", True, ((2,), "none", 6),
        lambda a: np.fft.irfft(a, 6, axis=2, norm="forward"),
    ),
}  # fmt: skip
#: The input shape of the primitive cases: a batch, then the transformed sizes (the c2r
#: cases read 4 bins along the last axis: 7 // 2 + 1 and 6 // 2 + 1)
SHAPE = (2, 4, 4)


def _require_complex(ctx: Context) -> None:
    if not supports_complex(ctx.backend):
        raise Skip(f"{ctx.device} has no complex dtypes")


def _primitive(key: str, dtype: d.DType) -> Callable[[Context], Iterator[Measure]]:
    name, is_complex, static, reference = PRIMITIVES[key]

    def run(ctx: Context) -> Iterator[Measure]:
        _require_complex(ctx)
        if getattr(ctx.backend, name, None) is None:
            raise Skip(f"{ctx.device} has no {name} kernel (optional: the core's host code)")
        rng = np.random.default_rng(len(key))
        re, im = rng.uniform(-1, 1, SHAPE), rng.uniform(-1, 1, SHAPE)
        x = ctx.put(re, dtype)
        if is_complex:
            x = ctx.call("complex", x, ctx.put(im, dtype))
            want = reference(re + 1j * im)
        else:
            want = reference(re)
        out = ctx.call(name, x, *static)
        tolerance = 8 * PRIMITIVE_TOLERANCE[dtype]  # sums of a few terms of size 1
        if np.iscomplexobj(want):
            yield ctx.check(
                f"{key} (real part)", ctx.call("real", out), want.real, dtype, tolerance
            )
            yield ctx.check(
                f"{key} (imaginary part)", ctx.call("imag", out), want.imag, dtype, tolerance
            )
        else:
            yield ctx.check(key, out, want, dtype, tolerance)
        yield ctx.untouched()

    return run


def _complex_transforms(m: Maker) -> Forward:
    re, im = m.input("re", m.batch(2), 4, 5), m.input("im", m.batch(2), 4, 5)

    def forward() -> tuple:
        z = tw.complex(re, im)
        return (
            tw.view_as_real(tw.fft.fft(z, norm="ortho")),
            tw.view_as_real(tw.fft.ifft2(z, s=(3, 6))),
            tw.view_as_real(tw.fft.fftn(re, dim=(-1, -2), norm="forward")),
        )

    return forward


def _real_transforms(m: Maker) -> Forward:
    x, im = m.input("x", m.batch(2), 4, 6), m.input("im", m.batch(2), 4, 6)

    def forward() -> tuple:
        z = tw.complex(x, im)
        return (
            tw.view_as_real(tw.fft.rfft(x, n=7)),
            tw.view_as_real(tw.fft.ihfft2(x, norm="ortho")),
            tw.fft.irfftn(z, s=(4, 9), dim=(1, 2)),
            tw.fft.hfft(z, n=5, norm="forward"),
        )

    return forward


CASES: dict[str, Callable[[Maker], Forward]] = {
    "complex": _complex_transforms,
    "real": _real_transforms,
}


def _case(key: str, layout: str = "standard") -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        _require_complex(ctx)
        return trial.compare(ctx, f"fft/{key}", CASES[key], layout=layout)

    return run


def cases() -> list[Case]:
    out = [
        Case(f"fft/primitive/{key}/{dtype.name}", _primitive(key, dtype))
        for key in PRIMITIVES
        for dtype in (d.float32, d.float64)
    ]
    for key in CASES:
        out.append(Case(f"fft/{key}", _case(key)))
        out += [Case(f"fft/{key}/{lay}", _case(key, lay)) for lay in trial.LAYOUTS]
    return out
