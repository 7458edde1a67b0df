"""tw.nn.init: gains and fans as PyTorch computes them; the distributions of the fills; the
default initialisation of layers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import host
from tensorweaver import nn
from tensorweaver.nn import init


@pytest.mark.parametrize(
    ("nonlinearity", "param"),
    [
        ("linear", None),
        ("conv2d", None),
        ("sigmoid", None),
        ("tanh", None),
        ("relu", None),
        ("leaky_relu", None),
        ("leaky_relu", 0.2),
        ("leaky_relu", math.sqrt(5)),
        ("selu", None),
    ],
)
def test_calculate_gain(nonlinearity: str, param: float | None) -> None:
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-15
    )


def test_calculate_gain_rejects_unknown() -> None:
    with pytest.raises(ValueError, match="unsupported nonlinearity"):
        init.calculate_gain("swish")


@pytest.mark.parametrize("shape", [(3, 4), (6, 2, 3, 5), (4, 3, 7)])
def test_fans(shape: tuple) -> None:
    expected = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert init._calculate_fan_in_and_fan_out(tw.empty(*shape)) == expected


def test_fans_need_two_dims() -> None:
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(tw.empty(5))


def _bound_and_std_check(values: np.ndarray, bound: float) -> None:
    """Values drawn from U(-bound, bound): inside it, reaching near its ends, std bound/sqrt(3)."""
    assert np.abs(values).max() <= bound
    assert np.abs(values).max() > 0.98 * bound
    assert values.std() == pytest.approx(bound / math.sqrt(3), rel=0.03)


def test_uniform_fills(backend: str) -> None:
    w = tw.empty(200, 100)
    assert init.uniform_(w, -0.5, 0.5) is w
    _bound_and_std_check(host(w), 0.5)
    init.xavier_uniform_(w, gain=2.0)
    _bound_and_std_check(host(w), 2.0 * math.sqrt(6 / 300))
    init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")
    _bound_and_std_check(host(w), math.sqrt(2) * math.sqrt(3 / 200))


def test_normal_fills(backend: str) -> None:
    w = tw.empty(300, 100)
    init.normal_(w, 1.0, 0.5)
    assert host(w).mean() == pytest.approx(1.0, abs=0.01)
    assert host(w).std() == pytest.approx(0.5, rel=0.02)
    init.xavier_normal_(w)
    assert host(w).std() == pytest.approx(math.sqrt(2 / 400), rel=0.02)
    init.kaiming_normal_(w, a=0.1, nonlinearity="leaky_relu")
    assert host(w).std() == pytest.approx(math.sqrt(2 / 1.01) / 10, rel=0.02)
    with pytest.raises(ValueError, match="fan_in, fan_out"):
        init.kaiming_normal_(w, mode="fan_avg")


def test_constant_fills(backend: str) -> None:
    w = tw.empty(3, 4)
    np.testing.assert_array_equal(host(init.constant_(w, 2.5)), np.full((3, 4), 2.5))
    np.testing.assert_array_equal(host(init.zeros_(w)), np.zeros((3, 4)))
    np.testing.assert_array_equal(host(init.ones_(w)), np.ones((3, 4)))
    np.testing.assert_array_equal(host(init.eye_(w)), np.eye(3, 4))
    with pytest.raises(ValueError, match="2 dimensions"):
        init.eye_(tw.empty(2, 2, 2))


def test_fills_do_not_touch_autograd(backend: str) -> None:
    p = nn.Parameter(tw.empty(4, 4))
    init.kaiming_uniform_(p)
    init.orthogonal_(p)
    init.trunc_normal_(p)
    assert p.is_leaf and p.requires_grad


@pytest.mark.parametrize("shape", [(5, 5), (3, 8), (8, 3), (4, 2, 3)])
def test_orthogonal(backend: str, shape: tuple) -> None:
    w = init.orthogonal_(tw.empty(*shape), gain=2.0)
    flat = host(w).reshape(shape[0], -1)
    gram = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(gram, 4.0 * np.eye(len(gram)), atol=1e-12)


def test_trunc_normal(backend: str) -> None:
    mean, std, a, b = 0.5, 2.0, -1.0, 1.5
    values = host(init.trunc_normal_(tw.empty(200, 200), mean, std, a, b))
    assert values.min() >= a and values.max() <= b
    # Moments of the truncated normal, from its closed form.
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    expected_mean = mean + std * (pdf(alpha) - pdf(beta)) / z
    expected_var = std**2 * (
        1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - ((pdf(alpha) - pdf(beta)) / z) ** 2
    )
    assert values.mean() == pytest.approx(expected_mean, abs=0.01)
    assert values.var() == pytest.approx(expected_var, rel=0.02)
    tail = host(init.trunc_normal_(tw.empty(10000), mean=0.0, std=1.0, a=3.0, b=4.0))
    assert tail.min() >= 3.0 and tail.max() <= 4.0 and tail.mean() < 3.4


def test_init_is_seeded(backend: str) -> None:
    tw.manual_seed(3)
    first = host(init.orthogonal_(tw.empty(3, 3)))
    tw.manual_seed(3)
    np.testing.assert_array_equal(host(init.orthogonal_(tw.empty(3, 3))), first)


@pytest.mark.parametrize(
    ("factory", "fan_in"),
    [
        (lambda: nn.Linear(400, 300), 400),
        (lambda: nn.Conv2d(16, 300, 5, groups=4), 4 * 25),
        (lambda: nn.Conv1d(8, 400, 3), 8 * 3),
        (lambda: nn.ConvTranspose2d(300, 16, 3, groups=2), 8 * 9),
    ],
)
def test_default_layer_init_is_fan_in_uniform(backend: str, factory: object, fan_in: int) -> None:
    # kaiming_uniform_(a=sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the bias shares it.
    layer = factory()
    bound = 1 / math.sqrt(fan_in)
    _bound_and_std_check(host(layer.weight), bound)
    bias = host(layer.bias)
    assert np.abs(bias).max() <= bound and bias.std() > 0.4 * bound


def test_default_init_of_other_layers(backend: str) -> None:
    emb = host(nn.Embedding(500, 40).weight)
    assert emb.std() == pytest.approx(1.0, rel=0.03)
    bilinear = nn.Bilinear(25, 10, 40)
    _bound_and_std_check(host(bilinear.weight), 1 / 5)
    assert np.abs(host(bilinear.bias)).max() <= 1 / 5
