"""Activations, softmax and friends against torch.nn.functional in float64."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from functional_reference import RTOL, check, check_same, gradcheck, host, randn
from tensorweaver.nn.functional import activation

POINTWISE = [
    ("relu", {}),
    ("relu6", {}),
    ("leaky_relu", {}),
    ("leaky_relu", {"negative_slope": 0.2}),
    ("elu", {}),
    ("elu", {"alpha": 0.5}),
    ("selu", {}),
    ("celu", {"alpha": 1.7}),
    ("gelu", {}),
    ("gelu", {"approximate": "tanh"}),
    ("silu", {}),
    ("mish", {}),
    ("softplus", {}),
    ("softplus", {"beta": 2.0, "threshold": 3.0}),
    ("softsign", {}),
    ("tanh", {}),
    ("sigmoid", {}),
    ("hardtanh", {}),
    ("hardtanh", {"min_val": -2.0, "max_val": 0.5}),
    ("hardsigmoid", {}),
    ("hardswish", {}),
    ("logsigmoid", {}),
]


@pytest.mark.parametrize(("name", "kwargs"), POINTWISE)
def test_pointwise(backend: str, name: str, kwargs: dict) -> None:
    x = randn(3, 4, 5, scale=4)
    # torch's celu and hardsigmoid backward round a constant (1 / alpha, 1 / 6) through
    # float32, off by ~1e-8; ours are exact, which gradcheck below confirms.
    rtol = 1e-6 if name in ("celu", "hardsigmoid") else RTOL
    check(lambda F, x: getattr(F, name)(x, **kwargs), x, rtol=rtol)


@pytest.mark.parametrize("name", ["elu", "celu", "selu", "softplus", "mish", "logsigmoid"])
def test_large_inputs_keep_gradients_finite(backend: str, name: str) -> None:
    x = np.array([-800.0, -30.0, -1.0, 0.5, 30.0, 800.0])
    check(lambda F, x: getattr(F, name)(x), x)


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "elu", "hardtanh", "silu", "hardswish"])
def test_inplace_writes_into_the_input(backend: str, name: str) -> None:
    def fn(F, x):
        y = x * 1  # a non-leaf, which in-place ops may overwrite
        out = getattr(F, name)(y, inplace=True)
        assert out is y
        return y

    check(fn, randn(4, 5, scale=3))


@pytest.mark.parametrize("fn_name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize(("shape", "dim"), [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -2)])
def test_softmax_family(backend: str, fn_name: str, shape: tuple, dim: int) -> None:
    check(lambda F, x: getattr(F, fn_name)(x, dim), randn(*shape, scale=5))


@pytest.mark.parametrize("fn_name", ["softmax", "log_softmax"])
def test_softmax_of_a_0d_tensor(backend: str, fn_name: str) -> None:
    check(lambda F, x: getattr(F, fn_name)(x, 0), np.array(2.5))


def test_softmax_extreme_logits(backend: str) -> None:
    x = np.array([[1000.0, 0.0, -1000.0], [-1e4, -1e4 + 1, -1e4 + 2]])
    check(lambda F, x: F.softmax(x, 1), x)
    check(lambda F, x: F.log_softmax(x, 1), x)


def test_softmax_dtype_argument(backend: str) -> None:
    x = tw.tensor(randn(3, 4).astype(np.float32))
    out = tw.nn.functional.softmax(x, 1, dtype=tw.float64)
    assert out.dtype is tw.float64


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_softmax_implicit_dim_warns(backend: str, ndim: int) -> None:
    x = randn(*(2, 3, 4)[:ndim])
    with pytest.warns(UserWarning, match="Implicit dimension"):
        out = tw.nn.functional.softmax(tw.tensor(x))
    implicit = 0 if ndim in (1, 3) else 1
    assert np.allclose(host(out).sum(implicit), 1.0)


@pytest.mark.parametrize(
    ("reference", "public"),
    [
        (activation.softmax_reference, activation.softmax),
        (activation.log_softmax_reference, activation.log_softmax),
    ],
)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax_reference_matches_public_path(backend: str, reference, public, axis: int) -> None:
    check_same(lambda x: reference(x, axis), lambda x: public(x, axis), randn(3, 4, 5, scale=3))


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_glu(backend: str, dim: int) -> None:
    check(lambda F, x: F.glu(x, dim), randn(4, 6, 2))


def test_glu_rejects_odd_size(backend: str) -> None:
    with pytest.raises(RuntimeError, match="glu: dimension 1"):
        tw.nn.functional.glu(tw.ones(2, 3), 1)


@pytest.mark.parametrize(("p", "dim"), [(2.0, 1), (1.0, 0), (3.0, -1)])
def test_normalize(backend: str, p: float, dim: int) -> None:
    check(lambda F, x: F.normalize(x, p=p, dim=dim), randn(3, 4, 5))


@pytest.mark.parametrize("channels", [1, 3])
def test_prelu(backend: str, channels: int) -> None:
    w = np.linspace(0.1, 0.5, channels)
    check(lambda F, x, w: F.prelu(x, w), randn(2, 3, 4, scale=2), w)


def test_gelu_rejects_unknown_approximation(backend: str) -> None:
    with pytest.raises(RuntimeError, match="approximate must be"):
        tw.nn.functional.gelu(tw.ones(2), approximate="erf")


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("gelu", {}),
        ("softplus", {"beta": 1.5}),
        ("mish", {}),
        ("selu", {}),
        ("celu", {"alpha": 1.7}),
        ("hardsigmoid", {}),
        ("logsigmoid", {}),
    ],
)
def test_gradcheck_pointwise(backend: str, name: str, kwargs: dict) -> None:
    gradcheck(lambda F, x: getattr(F, name)(x, **kwargs), randn(3, 4, scale=2))


def test_gradcheck_log_softmax(backend: str) -> None:
    gradcheck(lambda F, x: F.log_softmax(x, 1), randn(3, 5, scale=2))
