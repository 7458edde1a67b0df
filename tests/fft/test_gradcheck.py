"""Gradients of every transform by central finite differences in float64, for real and
complex inputs (a complex input made of two real leaves, so the check covers the
conjugate-Wirtinger convention), and second derivatives through each primitive's rule."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck, gradgradcheck

REAL_INPUT = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
ONE_DIM = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
ALL = [*ONE_DIM, "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]
ALL += ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]
#: Keywords per kind: odd and even sizes, padding and trimming, several dims.
ONE = {"n": 5, "norm": "ortho"}
MANY = {"s": (3, 4), "dim": (0, -1), "norm": "forward"}


def _real_out(y: Any) -> Any:
    # (resolved: ihfft's result is a conjugate view, as PyTorch's, which view_as_real refuses)
    return tw.view_as_real(y.resolve_conj()) if y.dtype.is_complex else y


def _transform(name: str) -> Callable[..., Any]:
    kwargs = ONE if name in ONE_DIM else MANY
    fn = getattr(tw.fft, name)
    if name in REAL_INPUT:
        return lambda x: _real_out(fn(x, **kwargs))
    return lambda re, im: _real_out(fn(tw.complex(re, im), **kwargs))


def _inputs(name: str, shape: tuple) -> list[np.ndarray]:
    rng = np.random.default_rng(len(name))
    count = 1 if name in REAL_INPUT else 2
    return [rng.standard_normal(shape) for _ in range(count)]


@pytest.mark.parametrize("name", ALL)
def test_gradients_by_finite_differences(backend: str, name: str) -> None:
    gradcheck(_transform(name), *_inputs(name, (3, 4)))


@pytest.mark.parametrize("name", ["fft", "ifft2", "rfft", "irfft", "hfftn"])
def test_real_input_of_complex_transforms(backend: str, name: str) -> None:
    """A real input of fft/ifft (r2c), or irfft/hfft (taken as complex), gets the real part."""
    fn = getattr(tw.fft, name)
    gradcheck(lambda x: _real_out(fn(x)), np.random.default_rng(0).standard_normal((2, 5)))


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft2", "ihfftn"])
def test_second_derivatives(backend: str, name: str) -> None:
    # A linear transform has zero second derivative: square it so the rule's own graph counts.
    inner = _transform(name)
    gradgradcheck(lambda *xs: inner(*xs) ** 2, *_inputs(name, (2, 4)))
