"""The 1-, 2- and 3-d pooling layers against torch.nn (float64): outputs and input gradients
batched and unbatched, indices, unpooling, fractional pooling with fixed samples, reprs."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import assert_close, check_layer
from tensorweaver import nn

rng = np.random.default_rng(0)
SHAPES = {1: (2, 3, 9), 2: (2, 2, 7, 6), 3: (1, 2, 5, 4, 6)}

# (class name, dimensions, constructor arguments)
LAYERS = [
    ("MaxPool1d", 1, {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("MaxPool3d", 3, {"kernel_size": 2, "stride": 1, "dilation": (1, 2, 1)}),
    ("AvgPool3d", 3, {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False}),
    ("AvgPool3d", 3, {"kernel_size": 2, "ceil_mode": True, "divisor_override": 5}),
    ("AdaptiveAvgPool3d", 3, {"output_size": (2, None, 4)}),
    ("AdaptiveMaxPool1d", 1, {"output_size": 4}),
    ("AdaptiveMaxPool2d", 2, {"output_size": (3, 4)}),
    ("AdaptiveMaxPool3d", 3, {"output_size": 2}),
    ("LPPool1d", 1, {"norm_type": 2, "kernel_size": 3, "stride": 2}),
    ("LPPool2d", 2, {"norm_type": 2.0, "kernel_size": (2, 3), "ceil_mode": True}),
    ("LPPool3d", 3, {"norm_type": 2, "kernel_size": 2}),
]


@pytest.mark.parametrize(("name", "nd", "kwargs"), LAYERS)
def test_layer_matches_torch(backend: str, name: str, nd: int, kwargs: dict) -> None:
    ours, theirs = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    check_layer(ours, theirs, rng.standard_normal(SHAPES[nd]))
    check_layer(ours, theirs, rng.standard_normal(SHAPES[nd][1:]))
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_with_indices_round_trips_through_max_unpool(backend: str, nd: int) -> None:
    x = rng.standard_normal(SHAPES[nd])
    pools = [
        m(2, return_indices=True)
        for m in (getattr(nn, f"MaxPool{nd}d"), getattr(torch.nn, f"MaxPool{nd}d"))
    ]
    unpools = [getattr(nn, f"MaxUnpool{nd}d")(2), getattr(torch.nn, f"MaxUnpool{nd}d")(2)]
    assert repr(unpools[0]) == repr(unpools[1])
    (values, indices), (expected_values, expected_indices) = (
        pools[0](tw.tensor(x)),
        pools[1](torch.tensor(x)),
    )
    assert_close(values, expected_values)
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    size = x.shape[-nd:]
    assert_close(
        unpools[0](values, indices, output_size=size),
        unpools[1](expected_values, expected_indices, output_size=size),
    )


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_with_fixed_samples(backend: str, nd: int) -> None:
    x = rng.standard_normal(SHAPES[nd])
    samples = rng.random((x.shape[0], x.shape[1], nd))
    kwargs = {"kernel_size": 2, "output_ratio": 0.5, "return_indices": True}
    ours = getattr(nn, f"FractionalMaxPool{nd}d")(**kwargs, _random_samples=tw.tensor(samples))
    theirs = getattr(torch.nn, f"FractionalMaxPool{nd}d")(
        **kwargs, _random_samples=torch.tensor(samples)
    )
    (values, indices), (expected_values, expected_indices) = (
        ours(tw.tensor(x)),
        theirs(torch.tensor(x)),
    )
    assert_close(values, expected_values)
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
    assert ours.output_ratio == theirs.output_ratio
    assert "_random_samples" in dict(ours.named_buffers())


def test_fractional_max_pool_needs_exactly_one_size() -> None:
    for kwargs in ({}, {"output_size": 3, "output_ratio": 0.5}):
        with pytest.raises(ValueError):
            torch.nn.FractionalMaxPool2d(2, **kwargs)
        with pytest.raises(ValueError, match="output"):
            nn.FractionalMaxPool2d(2, **kwargs)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.FractionalMaxPool3d(2, output_ratio=1.5)


@pytest.mark.parametrize(
    "build",
    [
        lambda nn: nn.MaxPool3d(3, 2, 1, ceil_mode=True),
        lambda nn: nn.AvgPool3d((2, 3, 2)),
        lambda nn: nn.AdaptiveMaxPool3d((2, None, 3), return_indices=True),
        lambda nn: nn.AdaptiveAvgPool3d(1),
        lambda nn: nn.LPPool3d(3, 2, stride=1),
        lambda nn: nn.MaxUnpool3d(3, 2, 1),
        lambda nn: nn.MaxUnpool1d(2),
    ],
)
def test_repr_matches_torch(build) -> None:
    assert repr(build(nn)) == repr(build(torch.nn))
