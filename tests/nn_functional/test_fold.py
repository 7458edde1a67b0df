"""fold and unfold (batched and unbatched) and the pixel and channel shuffles against
torch.nn.functional in float64."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from functional_reference import check, randn
from torch_twins import host


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [
        ((2, 3 * 4, 30), {"output_size": (6, 7), "kernel_size": 2}),
        ((1, 2 * 6, 12), {"output_size": (5, 6), "kernel_size": (2, 3), "dilation": (1, 2),
                          "padding": 1, "stride": (2, 1)}),
        ((3 * 4, 9), {"output_size": 5, "kernel_size": 2, "stride": 2, "padding": 1}),
        ((2, 4, 16), {"output_size": (4, 7), "kernel_size": (1, 2), "stride": (1, 2),
                      "dilation": (1, 3), "padding": (0, 2)}),
    ],
)  # fmt: skip
def test_fold(backend: str, shape: tuple, kwargs: dict) -> None:
    check(lambda F, x: F.fold(x, **kwargs), randn(*shape))


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [
        ((3, 6, 5), {"kernel_size": (2, 3), "padding": (1, 0)}),  # unbatched
        ((2, 2, 7, 6), {"kernel_size": 3, "dilation": 2, "stride": (1, 2), "padding": 2}),
    ],
)
def test_unfold_more_options(backend: str, shape: tuple, kwargs: dict) -> None:
    check(lambda F, x: F.unfold(x, **kwargs), randn(*shape))


def test_fold_is_the_adjoint_of_unfold(backend: str) -> None:
    # <unfold(x), y> == <x, fold(y)> for every x, y.
    kwargs = {"kernel_size": (3, 2), "dilation": (1, 2), "padding": 1, "stride": 2}
    x, y = randn(2, 3, 7, 8), randn(2, 3 * 6, 4 * 4, seed=1)
    F = tw.nn.functional
    left = (host(F.unfold(tw.tensor(x), **kwargs)) * y).sum()
    right = (x * host(F.fold(tw.tensor(y), (7, 8), **kwargs))).sum()
    np.testing.assert_allclose(left, right, rtol=1e-12)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda F: F.fold(tw.ones(1, 5, 9), 4, 2), r"expected input of shape \(N, C \* 4, 9\)"),
        (lambda F: F.fold(tw.ones(1, 4, 8), 4, 2), r"3x3 blocks"),
        (lambda F: F.fold(tw.ones(2, 3, 4, 4), 4, 2), r"expected a 2-D \(unbatched\) or 3-D"),
        (lambda F: F.unfold(tw.ones(1, 1, 2, 2, 2), 2), r"expected a 3-D \(unbatched\) or 4-D"),
    ],
)
def test_fold_errors(backend: str, call, match: str) -> None:
    with pytest.raises(RuntimeError, match=match):  # PyTorch's class
        call(tw.nn.functional)


@pytest.mark.parametrize("shape", [(2, 3, 8, 3, 5), (12, 2, 4), (1, 4, 1, 1)])
def test_pixel_shuffle(backend: str, shape: tuple) -> None:
    check(lambda F, x: F.pixel_shuffle(x, 2), randn(*shape))


@pytest.mark.parametrize(("shape", "r"), [((2, 3, 6, 9), 3), ((3, 4, 6), 2), ((2, 2, 1, 2, 2), 1)])
def test_pixel_unshuffle(backend: str, shape: tuple, r: int) -> None:
    check(lambda F, x: F.pixel_unshuffle(x, r), randn(*shape))


def test_pixel_unshuffle_inverts_pixel_shuffle(backend: str) -> None:
    x = tw.tensor(randn(2, 18, 2, 3))
    F = tw.nn.functional
    np.testing.assert_array_equal(host(F.pixel_unshuffle(F.pixel_shuffle(x, 3), 3)), host(x))


@pytest.mark.parametrize(
    ("shape", "groups"), [((2, 6, 4), 3), ((1, 8, 2, 3), 2), ((2, 4, 1, 2, 2), 4)]
)
def test_channel_shuffle(backend: str, shape: tuple, groups: int) -> None:
    check(lambda F, x: F.channel_shuffle(x, groups), randn(*shape))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda F: F.pixel_shuffle(tw.ones(1, 6, 2, 2), 2), r"channels divisible by"),
        (lambda F: F.pixel_shuffle(tw.ones(4, 2), 2), r"at least 3-D"),
        (lambda F: F.pixel_shuffle(tw.ones(1, 4, 2, 2), 0), r"upscale_factor must be positive"),
        (lambda F: F.pixel_unshuffle(tw.ones(1, 1, 4, 5), 2), r"divisible by downscale_factor"),
        (lambda F: F.channel_shuffle(tw.ones(2, 4), 2), r"at least 3-D"),
        (lambda F: F.channel_shuffle(tw.ones(2, 4, 3), 3), r"C divisible by groups=3"),
    ],
)
def test_shuffle_errors(backend: str, call, match: str) -> None:
    with pytest.raises(RuntimeError, match=match):
        call(tw.nn.functional)
