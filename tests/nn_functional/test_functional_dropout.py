"""Dropout: masks from tw.rand on the input's device, scaling, identity when not training."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from functional_reference import host, randn

F = tw.nn.functional


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_dropout_zeroes_a_fraction_p_and_scales_the_rest(backend: str, p: float) -> None:
    tw.manual_seed(1)
    x = tw.tensor(randn(200, 50) + 3, requires_grad=True)
    out = F.dropout(x, p)
    assert out.device == x.device
    y, xs = host(out), host(x)
    kept = y != 0
    assert abs(1 - kept.mean() - p) < 0.02
    np.testing.assert_allclose(y[kept], xs[kept] / (1 - p), rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(host(x.grad), kept / (1 - p), rtol=1e-12)


def test_dropout_draws_a_new_mask_each_call(backend: str) -> None:
    x = tw.ones(100)
    assert not np.array_equal(host(F.dropout(x)), host(F.dropout(x)))


SHAPES = {
    "dropout": (3, 4),
    "dropout1d": (2, 3, 4),
    "dropout2d": (2, 3, 4, 5),
    "dropout3d": (2, 3, 4, 5, 6),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_identity_when_not_training_or_p_zero(backend: str, name: str) -> None:
    x = tw.tensor(randn(*SHAPES[name]))
    for kwargs in ({"training": False}, {"p": 0.0}):
        assert getattr(F, name)(x, **kwargs) is x


def test_dropout_p_one_gives_zeros(backend: str) -> None:
    np.testing.assert_array_equal(host(F.dropout(tw.tensor(randn(3, 4)), 1.0)), 0)


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("dropout1d", (8, 30, 5)),
        ("dropout1d", (30, 5)),
        ("dropout2d", (8, 30, 3, 4)),
        ("dropout3d", (4, 30, 2, 2, 3)),
    ],
)
def test_feature_dropout_zeroes_whole_channels(backend: str, name: str, shape: tuple) -> None:
    tw.manual_seed(2)
    x = tw.tensor(randn(*shape) + 5)
    y = host(getattr(F, name)(x, 0.5))
    spatial = {"dropout1d": 1, "dropout2d": 2, "dropout3d": 3}[name]
    per_channel = y.reshape(*shape[: len(shape) - spatial], -1)
    dropped, kept = (per_channel == 0).all(-1), (per_channel != 0).all(-1)
    assert (dropped | kept).all()
    assert 0.3 < dropped.mean() < 0.7
    expected = host(x).reshape(per_channel.shape) * 2
    np.testing.assert_allclose(per_channel[kept], expected[kept], rtol=1e-12)


def test_dropout2d_reads_3d_input_as_batched_1d(backend: str) -> None:
    x = tw.tensor(randn(30, 8, 5) + 5)
    with pytest.warns(UserWarning, match=r"treated as \(N, C, L\)"):
        y = host(F.dropout2d(x, 0.5))
    dropped, kept = (y == 0).all(-1), (y != 0).all(-1)
    assert (dropped | kept).all()
    # Masked per (N, C): some sample keeps one channel and drops another.
    assert (dropped.any(1) & kept.any(1)).any()


def test_dropout_rejects_bad_probability(backend: str) -> None:
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        F.dropout(tw.ones(3), 1.5)
