"""Activation layers and Dropout against torch.nn (float64)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import RTOL, check_layer, host
from tensorweaver import nn

rng = np.random.default_rng(0)

ACTIVATIONS = [
    ("ReLU", {}),
    ("LeakyReLU", {"negative_slope": 0.2}),
    ("ELU", {"alpha": 0.7}),
    ("GELU", {}),
    ("GELU", {"approximate": "tanh"}),
    ("SiLU", {}),
    ("Mish", {}),
    ("Tanh", {}),
    ("Sigmoid", {}),
    ("Softmax", {"dim": 1}),
    ("Softmax", {"dim": -1}),
    ("LogSoftmax", {"dim": 0}),
    ("Softplus", {"beta": 2.0, "threshold": 1.5}),
    ("Hardtanh", {"min_val": -0.5, "max_val": 0.8}),
    ("ReLU6", {}),
    ("CELU", {"alpha": 1.5}),
    ("SELU", {}),
    ("Hardswish", {}),
    ("Hardsigmoid", {}),
    ("Softsign", {}),
    ("LogSigmoid", {}),
    ("Softmin", {"dim": 2}),
    ("GLU", {}),
    ("GLU", {"dim": 1}),
    ("PReLU", {}),
    ("PReLU", {"num_parameters": 4, "init": 0.1}),
]


@pytest.mark.parametrize(("name", "kwargs"), ACTIVATIONS)
def test_activation(backend: str, name: str, kwargs: dict) -> None:
    x = rng.standard_normal((3, 4, 6)) * 4
    # PyTorch's hardsigmoid backward scales by a float32 1/6 even in float64.
    rtol = 1e-7 if name == "Hardsigmoid" else RTOL
    check_layer(getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs), x, rtol=rtol)


@pytest.mark.parametrize(("name", "kwargs"), ACTIVATIONS + [("ReLU", {"inplace": True})])
def test_activation_repr(name: str, kwargs: dict) -> None:
    assert repr(getattr(nn, name)(**kwargs)) == repr(getattr(torch.nn, name)(**kwargs))


def test_activation_argument_checks() -> None:
    with pytest.raises(RuntimeError, match="approximate"):  # PyTorch's classes
        nn.GELU("fast")
    with pytest.raises(AssertionError, match="max_val"):
        nn.Hardtanh(1.0, -1.0)


def test_dropout_train_and_eval(backend: str) -> None:
    p = 0.25
    layer = nn.Dropout(p)
    x = tw.tensor(rng.uniform(1.0, 2.0, size=(200, 50)), requires_grad=True)
    out = layer(x)
    kept = host(out) != 0
    # Kept elements are scaled by 1/(1-p); the kept fraction is near 1-p (10000 draws).
    np.testing.assert_allclose(host(out)[kept], host(x)[kept] / (1 - p), rtol=1e-12)
    assert abs(kept.mean() - (1 - p)) < 0.02
    out.sum().backward()
    np.testing.assert_allclose(host(x.grad), kept / (1 - p), rtol=1e-12)
    layer.eval()
    y = tw.randn(3, 4)
    np.testing.assert_array_equal(host(layer(y)), host(y))
    assert repr(layer) == repr(torch.nn.Dropout(p)) == "Dropout(p=0.25, inplace=False)"


def test_dropout_rejects_bad_probability() -> None:
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            nn.Dropout(p)


@pytest.mark.parametrize(
    ("name", "shape"), [("Dropout1d", (20, 30, 4)), ("Dropout2d", (20, 30, 2, 3))]
)
def test_channel_dropout(backend: str, name: str, shape: tuple) -> None:
    layer = getattr(nn, name)(0.5)
    out = host(layer(tw.ones(*shape)))
    per_channel = out.reshape(shape[0], shape[1], -1)
    # Each channel is zeroed or scaled by 2 as a whole; about half survive (600 channels).
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(axis=-1) == per_channel.max(axis=-1)).all()
    assert abs((per_channel[..., 0] > 0).mean() - 0.5) < 0.1
    layer.eval()
    np.testing.assert_array_equal(host(layer(tw.ones(*shape))), np.ones(shape))
    assert repr(layer) == repr(getattr(torch.nn, name)(0.5))
