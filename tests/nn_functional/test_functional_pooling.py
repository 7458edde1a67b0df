"""Pooling against torch.nn.functional in float64."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from functional_reference import check, check_same, gradcheck, randn
from tensorweaver.nn.functional import pooling

MAX2D = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (2, 3), "stride": (1, 2), "padding": (1, 0)},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    {"kernel_size": 2, "stride": 3, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "dilation": 2, "padding": 1},
    {"kernel_size": 2, "return_indices": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": (1, 2), "return_indices": True},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True, "return_indices": True},
]


@pytest.mark.parametrize("kwargs", MAX2D)
@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (3, 6, 5)])
def test_max_pool2d(backend: str, kwargs: dict, shape: tuple) -> None:
    check(lambda F, x: F.max_pool2d(x, **kwargs), randn(*shape))


@pytest.mark.parametrize("kwargs", MAX2D[:3] + MAX2D[6:7])
def test_max_pool2d_ties_send_gradient_to_the_first_maximum(backend: str, kwargs: dict) -> None:
    x = np.round(randn(2, 2, 6, 6))  # few distinct values: many ties
    check(lambda F, x: F.max_pool2d(x, **kwargs), x)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kernel_size": 3},
        {"kernel_size": 2, "stride": 1, "padding": 1, "dilation": 2},
        {"kernel_size": 3, "stride": 2, "ceil_mode": True, "return_indices": True},
    ],
)
@pytest.mark.parametrize("shape", [(2, 3, 9), (3, 8)])
def test_max_pool1d(backend: str, kwargs: dict, shape: tuple) -> None:
    check(lambda F, x: F.max_pool1d(x, **kwargs), randn(*shape))


@pytest.mark.parametrize(
    ("kernel", "stride", "padding"), [((2, 2), (2, 2), (0, 0)), ((3, 2), (2, 1), (1, 1))]
)
def test_max_pool2d_reference_matches_public_path(
    backend: str, kernel: tuple, stride: tuple, padding: tuple
) -> None:
    check_same(
        lambda x: pooling.max_pool2d_reference(x, kernel, stride, padding),
        lambda x: tw.nn.functional.max_pool2d(x, kernel, stride, padding),
        np.round(randn(2, 3, 7, 6) * 2),
    )


AVG2D = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": (2, 3), "stride": 2, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": 2, "padding": 1, "divisor_override": 3},
]


@pytest.mark.parametrize("kwargs", AVG2D)
@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (3, 6, 5)])
def test_avg_pool2d(backend: str, kwargs: dict, shape: tuple) -> None:
    check(lambda F, x: F.avg_pool2d(x, **kwargs), randn(*shape))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kernel_size": 3},
        {"kernel_size": 4, "stride": 2, "padding": 2, "count_include_pad": False},
        {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    ],
)
def test_avg_pool1d(backend: str, kwargs: dict) -> None:
    check(lambda F, x: F.avg_pool1d(x, **kwargs), randn(2, 3, 10))


@pytest.mark.parametrize("output_size", [1, 3, (2, 5), (None, 2), (7, 4)])
@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (3, 5, 9)])
def test_adaptive_avg_pool2d(backend: str, output_size, shape: tuple) -> None:
    check(lambda F, x: F.adaptive_avg_pool2d(x, output_size), randn(*shape))


@pytest.mark.parametrize("output_size", [1, 4, 10])
def test_adaptive_avg_pool1d(backend: str, output_size: int) -> None:
    check(lambda F, x: F.adaptive_avg_pool1d(x, output_size), randn(2, 3, 10))


def test_max_pool2d_rejects_padding_over_half_the_kernel(backend: str) -> None:
    with pytest.raises(RuntimeError):
        torch.nn.functional.max_pool2d(torch.ones(1, 1, 5, 5), 2, padding=2)
    with pytest.raises(RuntimeError, match="at most half the kernel size"):
        tw.nn.functional.max_pool2d(tw.ones(1, 1, 5, 5), 2, padding=2)


def test_gradcheck_max_pool2d(backend: str) -> None:
    gradcheck(lambda F, x: F.max_pool2d(x, 3, 2, 1), randn(1, 2, 5, 6))


def test_gradcheck_avg_pool2d(backend: str) -> None:
    gradcheck(
        lambda F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        randn(1, 2, 6, 5),
    )
