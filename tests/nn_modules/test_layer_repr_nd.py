"""``repr`` of the pooling, normalisation, padding, activation and dropout layers of issue 15
equals PyTorch's (same arguments). Cases in the form of ``test_module_repr.LAYERS``."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import tensorweaver as tw
import torch

LAYERS: dict[str, Callable[[Any], Any]] = {
    "AdaptiveAvgPool3d": lambda nn: nn.AdaptiveAvgPool3d((2, None, 3)),
    "AdaptiveMaxPool1d": lambda nn: nn.AdaptiveMaxPool1d(4, return_indices=True),
    "AdaptiveMaxPool2d": lambda nn: nn.AdaptiveMaxPool2d((3, 4)),
    "AdaptiveMaxPool3d": lambda nn: nn.AdaptiveMaxPool3d(2),
    "AlphaDropout": lambda nn: nn.AlphaDropout(0.2),
    "AvgPool3d": lambda nn: nn.AvgPool3d(3, stride=2, padding=1),
    "BatchNorm3d": lambda nn: nn.BatchNorm3d(8, momentum=None),
    "CircularPad1d": lambda nn: nn.CircularPad1d((1, 2)),
    "CircularPad2d": lambda nn: nn.CircularPad2d(1),
    "CircularPad3d": lambda nn: nn.CircularPad3d((1, 0, 2, 1, 0, 1)),
    "ConstantPad1d": lambda nn: nn.ConstantPad1d(2, 3.5),
    "ConstantPad2d": lambda nn: nn.ConstantPad2d((1, 0, 2, 1), -1.0),
    "ConstantPad3d": lambda nn: nn.ConstantPad3d(1, 0.5),
    "CrossMapLRN2d": lambda nn: nn.CrossMapLRN2d(5, alpha=1e-3),
    "Dropout3d": lambda nn: nn.Dropout3d(0.1),
    "FeatureAlphaDropout": lambda nn: nn.FeatureAlphaDropout(),
    "FractionalMaxPool2d": lambda nn: nn.FractionalMaxPool2d(2, output_ratio=0.5),
    "FractionalMaxPool3d": lambda nn: nn.FractionalMaxPool3d(2, output_size=3),
    "Hardshrink": lambda nn: nn.Hardshrink(0.3),
    "InstanceNorm1d": lambda nn: nn.InstanceNorm1d(4),
    "InstanceNorm2d": lambda nn: nn.InstanceNorm2d(4, affine=True),
    "InstanceNorm3d": lambda nn: nn.InstanceNorm3d(4, track_running_stats=True),
    "LPPool1d": lambda nn: nn.LPPool1d(2, 3),
    "LPPool2d": lambda nn: nn.LPPool2d(1.5, (2, 3), stride=1),
    "LPPool3d": lambda nn: nn.LPPool3d(3, 2, ceil_mode=True),
    "LocalResponseNorm": lambda nn: nn.LocalResponseNorm(3, beta=0.5),
    "MaxPool3d": lambda nn: nn.MaxPool3d(3, 2, 1, ceil_mode=True),
    "MaxUnpool1d": lambda nn: nn.MaxUnpool1d(2),
    "MaxUnpool2d": lambda nn: nn.MaxUnpool2d(3, 2, 1),
    "MaxUnpool3d": lambda nn: nn.MaxUnpool3d((2, 3, 2)),
    "RReLU": lambda nn: nn.RReLU(0.1, 0.3),
    "ReflectionPad1d": lambda nn: nn.ReflectionPad1d(2),
    "ReflectionPad2d": lambda nn: nn.ReflectionPad2d((1, 2, 0, 1)),
    "ReflectionPad3d": lambda nn: nn.ReflectionPad3d(1),
    "ReplicationPad1d": lambda nn: nn.ReplicationPad1d((0, 3)),
    "ReplicationPad2d": lambda nn: nn.ReplicationPad2d(2),
    "ReplicationPad3d": lambda nn: nn.ReplicationPad3d(1),
    "Softmax2d": lambda nn: nn.Softmax2d(),
    "Softshrink": lambda nn: nn.Softshrink(),
    "SyncBatchNorm": lambda nn: nn.SyncBatchNorm(6, affine=False),
    "Tanhshrink": lambda nn: nn.Tanhshrink(),
    "Threshold": lambda nn: nn.Threshold(0.1, 20.0, inplace=True),
    "ZeroPad1d": lambda nn: nn.ZeroPad1d(2),
    "ZeroPad2d": lambda nn: nn.ZeroPad2d((1, 2, 3, 4)),
    "ZeroPad3d": lambda nn: nn.ZeroPad3d(1),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_repr_matches_torch(name: str) -> None:
    assert repr(LAYERS[name](tw.nn)) == repr(LAYERS[name](torch.nn))
