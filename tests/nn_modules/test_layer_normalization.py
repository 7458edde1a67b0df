"""Normalisation layers against torch.nn (float64), BatchNorm's running statistics included."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import assert_close, check_layer, copy_weights, host
from tensorweaver import nn

rng = np.random.default_rng(0)


def _perturb_affine(module: torch.nn.Module) -> torch.nn.Module:
    """Non-trivial affine parameters, so that a wrong use of them shows."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape))))
    return module


@pytest.mark.parametrize(
    ("cls", "shape", "kwargs"),
    [
        ("BatchNorm1d", (6, 3), {}),
        ("BatchNorm1d", (4, 3, 5), {"momentum": 0.3}),
        ("BatchNorm2d", (4, 3, 2, 5), {}),
        ("BatchNorm2d", (4, 3, 2, 2), {"momentum": None}),
        ("BatchNorm2d", (4, 3, 2, 2), {"affine": False}),
        ("BatchNorm1d", (5, 3), {"bias": False}),
    ],
)
def test_batch_norm_training_then_eval(backend: str, cls: str, shape: tuple, kwargs: dict) -> None:
    ours = getattr(nn, cls)(3, **kwargs)
    theirs = _perturb_affine(getattr(torch.nn, cls)(3, **kwargs).double())
    copy_weights(ours, theirs)
    for step in range(3):
        x = rng.standard_normal(shape) * 2 + step
        check_layer(ours, theirs, x, copy=False)
        for name, buf in theirs.named_buffers():
            assert_close(getattr(ours, name), buf)
    assert int(ours.num_batches_tracked.item()) == 3
    assert ours.num_batches_tracked.dtype is tw.int64
    ours.eval()
    theirs.eval()
    for p in theirs.parameters():
        p.grad = None
    ours.zero_grad()
    check_layer(ours, theirs, rng.standard_normal(shape), copy=False)
    for name, buf in theirs.named_buffers():  # eval does not touch the statistics
        assert_close(getattr(ours, name), buf)


def test_batch_norm_without_running_stats(backend: str) -> None:
    ours = nn.BatchNorm1d(3, track_running_stats=False)
    theirs = torch.nn.BatchNorm1d(3, track_running_stats=False)
    assert ours.running_mean is None and list(ours.state_dict()) == ["weight", "bias"]
    ours.eval()
    theirs.eval()
    check_layer(ours, theirs, rng.standard_normal((5, 3)))  # batch statistics even in eval


def test_batch_norm_checks_input_rank(backend: str) -> None:
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(tw.randn(2, 3, 4))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(3)(tw.randn(2, 3, 4, 4))


def test_batch_norm_loads_state_without_num_batches_tracked(backend: str) -> None:
    # Checkpoints from before the counter existed lack it; the current count is kept.
    ours = nn.BatchNorm1d(2)
    ours(tw.randn(4, 2))
    state = {k: v for k, v in ours.state_dict().items() if k != "num_batches_tracked"}
    result = nn.BatchNorm1d(2).load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []


@pytest.mark.parametrize(
    ("shape", "normalized", "kwargs"),
    [
        ((4, 5), 5, {}),
        ((2, 3, 4), (3, 4), {"eps": 1e-3}),
        ((2, 3, 4), 4, {"bias": False}),
        ((2, 3, 4), 4, {"elementwise_affine": False}),
    ],
)
def test_layer_norm(backend: str, shape: tuple, normalized: object, kwargs: dict) -> None:
    theirs = _perturb_affine(torch.nn.LayerNorm(normalized, **kwargs))
    check_layer(nn.LayerNorm(normalized, **kwargs), theirs, rng.standard_normal(shape))


@pytest.mark.parametrize(
    ("normalized", "kwargs"),
    [(4, {}), ((3, 4), {"eps": 1e-2}), (4, {"elementwise_affine": False})],
)
def test_rms_norm(backend: str, normalized: object, kwargs: dict) -> None:
    theirs = _perturb_affine(torch.nn.RMSNorm(normalized, **kwargs))
    check_layer(nn.RMSNorm(normalized, **kwargs), theirs, rng.standard_normal((2, 3, 4)))


@pytest.mark.parametrize(
    ("groups", "kwargs"),
    [(2, {}), (3, {"eps": 1e-3}), (1, {"affine": False}), (2, {"bias": False})],
)
def test_group_norm(backend: str, groups: int, kwargs: dict) -> None:
    theirs = _perturb_affine(torch.nn.GroupNorm(groups, 6, **kwargs))
    check_layer(nn.GroupNorm(groups, 6, **kwargs), theirs, rng.standard_normal((2, 6, 3, 2)))


def test_group_norm_rejects_indivisible_channels() -> None:
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(4, 6)


def test_normalization_defaults_and_repr() -> None:
    for ours, theirs in [
        (nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)),
        (
            nn.BatchNorm1d(3, momentum=None, affine=False),
            torch.nn.BatchNorm1d(3, momentum=None, affine=False),
        ),
        (nn.LayerNorm((2, 3)), torch.nn.LayerNorm((2, 3))),
        (nn.RMSNorm(4), torch.nn.RMSNorm(4)),
        (nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4)),
        (nn.GroupNorm(2, 4, bias=False), torch.nn.GroupNorm(2, 4, bias=False)),
        (nn.BatchNorm2d(3, bias=False), torch.nn.BatchNorm2d(3, bias=False)),
        (nn.LayerNorm(3, bias=False), torch.nn.LayerNorm(3, bias=False)),
    ]:
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        for name, value in theirs.state_dict().items():
            np.testing.assert_array_equal(host(ours.state_dict()[name]), host(value))
