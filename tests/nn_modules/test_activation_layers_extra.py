"""Threshold, Hardshrink, Softshrink, Tanhshrink, RReLU, Softmax2d and the alpha/3-d dropout
layers against torch.nn (float64): outputs, gradients, train/eval behaviour, reprs."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import assert_close, check_layer
from tensorweaver import nn

rng = np.random.default_rng(0)

LAYERS = {
    "Threshold": lambda nn: nn.Threshold(0.1, 20.0),
    "Threshold_inplace": lambda nn: nn.Threshold(-0.2, 1.5, inplace=True),
    "Hardshrink": lambda nn: nn.Hardshrink(),
    "Hardshrink_lambd": lambda nn: nn.Hardshrink(0.3),
    "Softshrink": lambda nn: nn.Softshrink(0.7),
    "Tanhshrink": lambda nn: nn.Tanhshrink(),
    "RReLU": lambda nn: nn.RReLU(0.1, 0.4),
    "Softmax2d": lambda nn: nn.Softmax2d(),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_matches_torch(backend: str, name: str) -> None:
    ours, theirs = LAYERS[name](nn), LAYERS[name](torch.nn)
    assert repr(ours) == repr(theirs)
    if name == "RReLU":  # deterministic in eval mode only
        ours.eval()
        theirs.eval()
    if name.endswith("inplace"):  # in place on a leaf is an error: compare values only
        x = rng.standard_normal((2, 3, 4))
        assert_close(ours(tw.tensor(x)), theirs(torch.tensor(x)))
        return
    check_layer(ours, theirs, rng.standard_normal((2, 3, 4, 5)))
    check_layer(ours, theirs, rng.standard_normal((3, 4, 5)))


def test_rrelu_draws_slopes_while_training(backend: str) -> None:
    layer = nn.RReLU(0.1, 0.3)
    x = tw.tensor(-np.abs(rng.standard_normal((50, 40))) - 0.1)
    tw.manual_seed(2)
    first = layer(x)
    tw.manual_seed(2)
    np.testing.assert_array_equal(layer(x).numpy(), first.numpy())
    slopes = first.numpy() / x.numpy()
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3 and slopes.std() > 0.03
    layer.eval()
    np.testing.assert_allclose(layer(x).numpy() / x.numpy(), 0.2)


def test_softmax2d_checks_the_rank(backend: str) -> None:
    with pytest.raises(ValueError):
        torch.nn.Softmax2d()(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="3D or 4D"):
        nn.Softmax2d()(tw.zeros(2, 3))


@pytest.mark.parametrize("name", ["AlphaDropout", "FeatureAlphaDropout", "Dropout3d"])
def test_dropout_layers(backend: str, name: str) -> None:
    ours, theirs = getattr(nn, name)(0.25), getattr(torch.nn, name)(0.25)
    assert repr(ours) == repr(theirs)
    x = rng.standard_normal((4, 6, 2, 3, 3))
    tw.manual_seed(4)
    out = ours(tw.tensor(x)).numpy()
    tw.manual_seed(4)
    np.testing.assert_array_equal(ours(tw.tensor(x)).numpy(), out)
    changed = out != x
    assert 0.1 < changed.mean() <= 1  # something was dropped
    if name != "AlphaDropout":  # whole channels share the draw
        per_channel = out.reshape(4, 6, -1)
        zeroed = np.isclose(per_channel, per_channel[:, :, :1]).all(-1)
        assert zeroed.any() and not zeroed.all()
    ours.eval()
    theirs.eval()
    assert_close(ours(tw.tensor(x)), theirs(torch.tensor(x)))
    with pytest.raises(ValueError, match="between 0 and 1"):
        getattr(nn, name)(1.5)
