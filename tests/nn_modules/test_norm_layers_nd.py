"""Instance norm, BatchNorm3d, SyncBatchNorm (one process), LocalResponseNorm and
CrossMapLRN2d against torch.nn (float64): outputs, gradients, running statistics in train and
eval mode, state dicts, unbatched inputs, conversion, reprs and errors."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import assert_close, check_layer, copy_weights
from tensorweaver import nn

rng = np.random.default_rng(0)
SHAPES = {1: (3, 4, 6), 2: (2, 4, 5, 3), 3: (2, 4, 3, 2, 3)}


def _train_then_eval(ours: nn.Module, theirs: torch.nn.Module, x: np.ndarray) -> None:
    """Two training steps, then eval: outputs, gradients and buffers agree throughout."""
    for step in range(2):
        check_layer(ours, theirs, x + step, copy=step == 0)
    for name, buffer in theirs.named_buffers():
        assert_close(dict(ours.named_buffers())[name], buffer)
    ours.eval()
    theirs.eval()
    check_layer(ours, theirs, x, copy=False)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"affine": True, "track_running_stats": True, "momentum": 0.3, "eps": 1e-3}],
)
def test_instance_norm(backend: str, nd: int, kwargs: dict) -> None:
    name = f"InstanceNorm{nd}d"
    ours, theirs = getattr(nn, name)(4, **kwargs), getattr(torch.nn, name)(4, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    _train_then_eval(ours, theirs, rng.standard_normal(SHAPES[nd]))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_instance_norm_unbatched(backend: str, nd: int) -> None:
    name = f"InstanceNorm{nd}d"
    kwargs = {"affine": True, "track_running_stats": True}
    ours, theirs = getattr(nn, name)(4, **kwargs), getattr(torch.nn, name)(4, **kwargs)
    _train_then_eval(ours, theirs, rng.standard_normal(SHAPES[nd][1:]))


def test_instance_norm_checks_the_channel_count(backend: str) -> None:
    x = rng.standard_normal((2, 3, 5))
    with pytest.raises(ValueError, match="num_features"):
        nn.InstanceNorm1d(4, affine=True)(tw.tensor(x))
    with pytest.warns(UserWarning, match="num_features"):
        out = nn.InstanceNorm1d(4)(tw.tensor(x))
    with pytest.warns(UserWarning, match="num_features"):
        expected = torch.nn.InstanceNorm1d(4)(torch.tensor(x))
    assert_close(out, expected)
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.InstanceNorm2d(3)(tw.tensor(x[0]))


def test_batch_norm_3d(backend: str) -> None:
    ours, theirs = nn.BatchNorm3d(4, momentum=None), torch.nn.BatchNorm3d(4, momentum=None)
    assert repr(ours) == repr(theirs)
    _train_then_eval(ours, theirs, rng.standard_normal(SHAPES[3]))
    with pytest.raises(ValueError, match="expected 5D input"):
        ours(tw.tensor(rng.standard_normal(SHAPES[2])))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_sync_batch_norm_is_batch_norm_on_one_process(backend: str, nd: int) -> None:
    ours, theirs = nn.SyncBatchNorm(4, momentum=0.2), torch.nn.SyncBatchNorm(4, momentum=0.2)
    assert repr(ours) == repr(theirs)
    _train_then_eval(ours, theirs, rng.standard_normal(SHAPES[nd]))
    with pytest.raises(ValueError, match="at least 2D"):
        ours(tw.ones(4))


def test_convert_sync_batchnorm_keeps_parameters_buffers_and_mode(backend: str) -> None:
    def build(nn):
        return nn.Sequential(
            nn.Conv2d(2, 4, 3),
            nn.BatchNorm2d(4),
            nn.Sequential(nn.BatchNorm1d(3, affine=False), nn.ReLU()),
        )

    ours, theirs = build(nn), build(torch.nn)
    copy_weights(ours, theirs.double())
    ours[1].eval()
    theirs[1].eval()
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(ours)
    expected = torch.nn.SyncBatchNorm.convert_sync_batchnorm(theirs)
    assert repr(converted) == repr(expected)
    assert type(converted[1]) is nn.SyncBatchNorm and converted[1].weight is ours[1].weight
    assert converted[1].training is False and converted[2][0].training is True
    assert list(converted.state_dict()) == list(expected.state_dict())
    x = rng.standard_normal((2, 2, 5, 5))
    assert_close(converted[:2](tw.tensor(x)), expected[:2](torch.tensor(x)))


@pytest.mark.parametrize("shape", [(2, 6, 5), (2, 7, 3, 4), (1, 5, 2, 3, 2)])
def test_local_response_norm(backend: str, shape: tuple) -> None:
    ours, theirs = (
        nn.LocalResponseNorm(3, 0.2, 0.6, 1.5),
        torch.nn.LocalResponseNorm(3, 0.2, 0.6, 1.5),
    )
    assert repr(ours) == repr(theirs)
    check_layer(ours, theirs, rng.standard_normal(shape))


def test_cross_map_lrn2d_output_and_repr(backend: str) -> None:
    ours, theirs = nn.CrossMapLRN2d(5, 0.3, 0.7, 2), torch.nn.CrossMapLRN2d(5, 0.3, 0.7, 2)
    assert repr(ours) == repr(theirs)
    x = rng.standard_normal((2, 8, 3, 3))
    assert_close(ours(tw.tensor(x)), theirs(torch.tensor(x)))
    with pytest.raises(ValueError, match="4D"):
        ours(tw.tensor(x[0]))
