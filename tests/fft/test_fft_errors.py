"""Bad arguments raise the exception type torch.fft raises, with a message naming the
problem: sizes below one, unknown norms, dims out of range or repeated, s and dim of
different lengths, complex input to the real transforms, half precision, wrong types."""

from __future__ import annotations

import numpy as np
import pytest
from tensor_reference import raises_like_torch

X = np.arange(12.0).reshape(3, 4)
Z = X + 1j
CASES = [
    ("n zero", lambda m, x: m.fft.fft(x, n=0), X, ["number of data points \\(0\\)"]),
    ("n negative", lambda m, x: m.fft.rfft(x, n=-1), X, ["number of data points \\(-1\\)"]),
    ("irfft of one point", lambda m, z: m.fft.irfft(z[:, :1]), Z, ["data points \\(0\\)"]),
    ("hfft n zero", lambda m, z: m.fft.hfft(z, n=0), Z, ["data points \\(0\\)"]),
    ("s with a zero", lambda m, x: m.fft.fftn(x, s=(0, 5)), X, ["data points \\(0\\)"]),
    ("empty dim", lambda m, x: m.fft.fft(x[:, :0]), X, ["data points \\(0\\)"]),
    ("unknown norm", lambda m, x: m.fft.fft(x, norm="foo"), X, ["normalization mode", "foo"]),
    ("norm of fftn", lambda m, x: m.fft.ifftn(x, norm="none"), X, ["normalization mode"]),
    ("dim out of range", lambda m, x: m.fft.fft(x, dim=2), X, ["out of range"]),
    ("negative dim out", lambda m, x: m.fft.fft2(x[0]), X, ["out of range"]),
    ("0-d", lambda m, x: m.fft.fft(x[0, 0]), X, ["no dimensions"]),
    ("dims repeated", lambda m, x: m.fft.fftn(x, dim=(0, -2)), X, ["unique"]),
    ("s and dim lengths", lambda m, x: m.fft.fftn(x, s=(2,), dim=(0, 1)), X, ["same length"]),
    ("s too long", lambda m, x: m.fft.rfftn(x, s=(2, 2, 2)), X, ["3 values"]),
    ("rfft of complex", lambda m, z: m.fft.rfft(z), Z, ["real input"]),
    ("ihfft of complex", lambda m, z: m.fft.ihfft(z), Z, ["real input"]),
    ("rfftn of complex", lambda m, z: m.fft.rfftn(z), Z, ["real input"]),
    ("rfftn of no dims", lambda m, x: m.fft.rfftn(x, dim=()), X, ["at least one axis"]),
    ("irfftn of no dims", lambda m, z: m.fft.irfftn(z, dim=()), Z, ["at least one axis"]),
    ("hfftn of no dims", lambda m, z: m.fft.hfftn(z, dim=()), Z, ["at least one axis"]),
    ("float16", lambda m, x: m.fft.fft(x.half()), X, ["dtype"]),
    ("float16 rfft2", lambda m, x: m.fft.rfft2(x.half()), X, ["dtype"]),
    ("n a float", lambda m, x: m.fft.fft(x, n=2.0), X, ["'n'", "int"]),
    ("dim a tuple", lambda m, x: m.fft.fft(x, dim=(0,)), X, ["'dim'", "int"]),
    ("input a list", lambda m: m.fft.fft([1.0, 2.0]), None, ["Tensor", "list"]),
    ("fftfreq of ints", lambda m: m.fft.fftfreq(4, dtype=m.int64), None, ["floating point"]),
    ("fftfreq negative", lambda m: m.fft.fftfreq(-1), None, ["negative dimension"]),
    ("fftshift of 0-d", lambda m, x: m.fft.fftshift(x[0, 0]), X, ["shifts"]),
    ("fftshift dim", lambda m, x: m.fft.fftshift(x, dim=5), X, ["out of range"]),
]


@pytest.mark.parametrize(("fn", "x", "match"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_errors_like_torch(backend: str, fn, x, match) -> None:
    if x is None:
        raises_like_torch(fn, match=match)
    else:
        raises_like_torch(fn, x, match=match)
