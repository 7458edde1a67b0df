"""Pooling layers against torch.nn (float64)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import assert_close, check_layer
from tensorweaver import nn

rng = np.random.default_rng(0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kernel_size": 2},
        {"kernel_size": 3, "stride": 2, "padding": 1},
        {"kernel_size": 2, "dilation": 2, "ceil_mode": True},
    ],
)
def test_max_pool1d(backend: str, kwargs: dict) -> None:
    check_layer(
        nn.MaxPool1d(**kwargs), torch.nn.MaxPool1d(**kwargs), rng.standard_normal((2, 3, 9))
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kernel_size": 2},
        {"kernel_size": (3, 2), "stride": (2, 1), "padding": 1},
        {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    ],
)
def test_max_pool2d(backend: str, kwargs: dict) -> None:
    check_layer(
        nn.MaxPool2d(**kwargs), torch.nn.MaxPool2d(**kwargs), rng.standard_normal((2, 3, 7, 6))
    )


def test_max_pool2d_return_indices(backend: str) -> None:
    x = rng.standard_normal((1, 2, 6, 6))
    values, indices = nn.MaxPool2d(2, return_indices=True)(tw.tensor(x))
    expected_values, expected_indices = torch.nn.MaxPool2d(2, return_indices=True)(torch.tensor(x))
    assert_close(values, expected_values)
    np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kernel_size": 3},
        {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
        {"kernel_size": 2, "ceil_mode": True},
    ],
)
def test_avg_pool1d(backend: str, kwargs: dict) -> None:
    check_layer(
        nn.AvgPool1d(**kwargs), torch.nn.AvgPool1d(**kwargs), rng.standard_normal((2, 3, 9))
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kernel_size": 2},
        {"kernel_size": 3, "stride": 2, "padding": 1},
        {"kernel_size": 3, "padding": 1, "count_include_pad": False},
        {"kernel_size": 2, "divisor_override": 3},
    ],
)
def test_avg_pool2d(backend: str, kwargs: dict) -> None:
    check_layer(
        nn.AvgPool2d(**kwargs), torch.nn.AvgPool2d(**kwargs), rng.standard_normal((2, 3, 6, 7))
    )


@pytest.mark.parametrize("output_size", [1, (3, 2), (None, 4), 5])
def test_adaptive_avg_pool2d(backend: str, output_size: object) -> None:
    check_layer(
        nn.AdaptiveAvgPool2d(output_size),
        torch.nn.AdaptiveAvgPool2d(output_size),
        rng.standard_normal((2, 3, 7, 6)),
    )


@pytest.mark.parametrize("output_size", [1, 4, 7])
def test_adaptive_avg_pool1d(backend: str, output_size: int) -> None:
    check_layer(
        nn.AdaptiveAvgPool1d(output_size),
        torch.nn.AdaptiveAvgPool1d(output_size),
        rng.standard_normal((2, 3, 7)),
    )


def test_pooling_repr() -> None:
    pairs = [
        (nn.MaxPool2d(3, 2, 1), torch.nn.MaxPool2d(3, 2, 1)),
        (nn.MaxPool1d(2), torch.nn.MaxPool1d(2)),
        (nn.AvgPool1d(3), torch.nn.AvgPool1d(3)),
        (nn.AvgPool2d((2, 3), padding=1), torch.nn.AvgPool2d((2, 3), padding=1)),
        (nn.AdaptiveAvgPool2d((1, 1)), torch.nn.AdaptiveAvgPool2d((1, 1))),
        (nn.AdaptiveAvgPool1d(3), torch.nn.AdaptiveAvgPool1d(3)),
    ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
