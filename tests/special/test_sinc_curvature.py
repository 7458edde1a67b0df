"""sinc's derivatives at 0: the value there is sinc's series 1 - (pi x)**2 / 6, so the
second derivative is -pi**2 / 3 (finite differences of the first derivative agree), where a
constant 1 gave 0 and PyTorch gives NaN; values and first derivatives stay torch's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered


@pytest.mark.parametrize("spec", FAST)
def test_sinc_second_derivative_at_zero(spec: str) -> None:
    with entered(spec, float64=True):
        x = tw.tensor([0.0, 0.5, -1.0, 2.5], requires_grad=True)
        (first,) = tw.autograd.grad(tw.sinc(x).sum(), x, create_graph=True)
        (second,) = tw.autograd.grad(first.sum(), x)
        h = 1e-5

        def slope(at: np.ndarray) -> np.ndarray:
            p = tw.tensor(at, requires_grad=True)
            return np.asarray(tw.autograd.grad(tw.sinc(p).sum(), p)[0])

        points = np.asarray(x.detach())
        numeric = (slope(points + h) - slope(points - h)) / (2 * h)
    np.testing.assert_allclose(np.asarray(second), numeric, rtol=1e-6, atol=1e-6)
    assert abs(float(second[0]) + math.pi**2 / 3) < 1e-12
    t = torch.tensor([0.0, 0.5, -1.0, 2.5], dtype=torch.float64, requires_grad=True)
    value = torch.sinc(t)
    (their_first,) = torch.autograd.grad(value.sum(), t)
    np.testing.assert_allclose(np.asarray(tw.sinc(x).detach()), value.detach().numpy(), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(first.detach()), their_first.numpy(), rtol=1e-13)
