"""Gradients that start as a broadcast view, on every backend (issue 12).

The gradient of ``sum`` or ``mean`` is an ``expand`` of a 0-d array: a view with stride 0,
which the core hands on to the next gradient rule unchanged. cuPyNumeric's matmul took it
to BLAS and got zeros ("SGEMM parameter number 8 had an illegal value"), so
``(x @ w.t()).sum().backward()`` gave x.grad = 0 there. Each test compares with NumPy in
float64, and the nonlinear one also with central differences on the device itself.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tw_backends import ALL, entered

RTOL = 1e-12


@pytest.fixture(params=ALL)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    with entered(request.param, float64=True) as spec:
        yield spec


def _values(*shape: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def test_the_issue_repro_gives_the_row_sums(backend):
    x = tw.ones(2, 4, requires_grad=True)
    w = tw.ones(10, 4, requires_grad=True)
    (x @ w.t()).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 4), 10.0))
    np.testing.assert_array_equal(w.grad.numpy(), np.full((10, 4), 2.0))


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_matmul_gradients_from_a_sum_or_mean(backend, reduction):
    xh, wh = _values(3, 4, seed=1), _values(5, 4, seed=2)
    x, w = tw.tensor(xh, requires_grad=True), tw.tensor(wh, requires_grad=True)
    getattr(x @ w.t(), reduction)().backward()
    upstream = np.full((3, 5), 1.0 if reduction == "sum" else 1 / 15)
    np.testing.assert_allclose(x.grad.numpy(), upstream @ wh, rtol=RTOL)
    np.testing.assert_allclose(w.grad.numpy(), upstream.T @ xh, rtol=RTOL)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_linear_layer_and_functional_linear(backend, reduction):
    xh = _values(2, 3, 4, seed=3)
    layer = nn.Linear(4, 6)
    with tw.no_grad():
        layer.weight.copy_(tw.tensor(_values(6, 4, seed=4)))
        layer.bias.copy_(tw.tensor(_values(6, seed=5)))
    wh, bh = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    n = 1.0 if reduction == "sum" else 2 * 3 * 6
    for run in (layer, lambda x: F.linear(x, layer.weight, layer.bias)):
        layer.zero_grad()
        x = tw.tensor(xh, requires_grad=True)
        out = run(x)
        np.testing.assert_allclose(out.detach().numpy(), xh @ wh.T + bh, rtol=RTOL)
        getattr(out, reduction)().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(wh.sum(0), xh.shape) / n)
        np.testing.assert_allclose(layer.weight.grad.numpy(), np.tile(xh.sum((0, 1)), (6, 1)) / n)
        np.testing.assert_allclose(layer.bias.grad.numpy(), np.full(6, 2 * 3 / n))


def test_nonlinear_gradient_matches_finite_differences(backend):
    xh, wh = _values(3, 4, seed=6), _values(5, 4, seed=7)

    def loss(xv: np.ndarray, wv: np.ndarray) -> tuple:
        x, w = tw.tensor(xv, requires_grad=True), tw.tensor(wv, requires_grad=True)
        return (x.tanh() @ w.t()).sum(), x, w

    value, x, w = loss(xh, wh)
    value.backward()
    dx, dw = _values(3, 4, seed=8), _values(5, 4, seed=9)
    eps = 1e-6
    up = loss(xh + eps * dx, wh + eps * dw)[0].item()
    down = loss(xh - eps * dx, wh - eps * dw)[0].item()
    slope = float((x.grad.numpy() * dx).sum() + (w.grad.numpy() * dw).sum())
    assert slope == pytest.approx((up - down) / (2 * eps), rel=1e-7)
    np.testing.assert_allclose(x.grad.numpy(), (1 - np.tanh(xh) ** 2) * wh.sum(0), rtol=RTOL)
