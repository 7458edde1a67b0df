"""Padding, unfold and convolutions against torch.nn.functional in float64."""

from __future__ import annotations

import pytest
import tensorweaver as tw
from functional_reference import check, check_same, gradcheck, randn
from tensorweaver.nn.functional import conv

CONV2D = [
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 2), {"stride": 2, "padding": 1}),
    ((1, 2, 8, 9), (3, 2, 3, 3), {"stride": (2, 3), "padding": (2, 0), "dilation": (1, 2)}),
    ((2, 4, 6, 6), (6, 2, 3, 3), {"groups": 2, "padding": 1}),
    ((2, 4, 5, 5), (4, 1, 2, 2), {"groups": 4}),
    ((2, 3, 6, 7), (2, 3, 4, 3), {"padding": "same"}),
    ((2, 3, 6, 7), (2, 3, 2, 3), {"padding": "same", "dilation": (2, 1)}),
    ((2, 3, 6, 7), (2, 3, 3, 3), {"padding": "valid"}),
    ((3, 6, 5), (2, 3, 3, 3), {"padding": 1}),  # unbatched
]


@pytest.mark.parametrize(("x_shape", "w_shape", "kwargs"), CONV2D)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv2d(backend: str, x_shape: tuple, w_shape: tuple, kwargs: dict, bias: bool) -> None:
    arrays = [randn(*x_shape), randn(*w_shape, seed=1)]
    if bias:
        arrays.append(randn(w_shape[0], seed=2))
    check(lambda F, x, w, *b: F.conv2d(x, w, *b, **kwargs), *arrays)


@pytest.mark.parametrize(("x_shape", "w_shape", "kwargs"), CONV2D[:5])
def test_conv2d_reference_matches_public_path(
    backend: str, x_shape: tuple, w_shape: tuple, kwargs: dict
) -> None:
    def pair(name: str, default: int) -> tuple:
        v = kwargs.get(name, default)
        return v if isinstance(v, tuple) else (v, v)

    args = (pair("stride", 1), pair("padding", 0), pair("dilation", 1), kwargs.get("groups", 1))
    check_same(
        lambda x, w, b: conv.conv2d_reference(x, w, b, *args),
        lambda x, w, b: tw.nn.functional.conv2d(x, w, b, *args),
        randn(*x_shape),
        randn(*w_shape, seed=1),
        randn(w_shape[0], seed=2),
    )


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "kwargs"),
    [
        ((2, 3, 10), (4, 3, 3), {}),
        ((2, 4, 11), (6, 2, 4), {"stride": 2, "padding": 2, "dilation": 2, "groups": 2}),
        ((2, 3, 9), (2, 3, 4), {"padding": "same"}),
        ((3, 9), (2, 3, 2), {}),  # unbatched
    ],
)
def test_conv1d(backend: str, x_shape: tuple, w_shape: tuple, kwargs: dict) -> None:
    check(
        lambda F, x, w, b: F.conv1d(x, w, b, **kwargs),
        randn(*x_shape),
        randn(*w_shape, seed=1),
        randn(w_shape[0], seed=2),
    )


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "kwargs"),
    [
        ((2, 3, 4, 5), (3, 2, 3, 3), {}),
        ((2, 3, 4, 5), (3, 2, 3, 2), {"stride": 2, "padding": 1, "output_padding": 1}),
        ((1, 4, 3, 4), (4, 3, 2, 3), {"stride": (2, 3), "groups": 2, "padding": (0, 1)}),
        ((2, 2, 4, 4), (2, 2, 3, 3), {"dilation": 2, "padding": 3}),
        ((2, 2, 4, 4), (2, 1, 3, 3), {"stride": 2, "dilation": 2, "output_padding": 1}),
        ((3, 4, 5), (3, 2, 2, 2), {"stride": 2}),  # unbatched
    ],
)
def test_conv_transpose2d(backend: str, x_shape: tuple, w_shape: tuple, kwargs: dict) -> None:
    check(
        lambda F, x, w, b: F.conv_transpose2d(x, w, b, **kwargs),
        randn(*x_shape),
        randn(*w_shape, seed=1),
        randn(w_shape[1] * kwargs.get("groups", 1), seed=2),
    )


@pytest.mark.parametrize(
    "kwargs", [{}, {"stride": 3, "padding": 1, "output_padding": 2, "dilation": 2}]
)
def test_conv_transpose1d(backend: str, kwargs: dict) -> None:
    check(
        lambda F, x, w, b: F.conv_transpose1d(x, w, b, **kwargs),
        randn(2, 3, 6),
        randn(3, 2, 3, seed=1),
        randn(2, seed=2),
    )


@pytest.mark.parametrize(
    ("pad", "mode", "value"),
    [
        ((1, 2), "constant", None),
        ((1, 2, 0, 3), "constant", 1.5),
        ((-1, 2, 1, -2), "constant", 0.0),
        ((1, 2, 2, 0), "reflect", None),
        ((3, 0, 1, 2), "replicate", None),
        ((2, 4, 1, 1), "circular", None),
    ],
)
def test_pad(backend: str, pad: tuple, mode: str, value) -> None:
    check(lambda F, x: F.pad(x, pad, mode=mode, value=value), randn(2, 3, 4, 5))


def test_pad_rejects_reflection_wider_than_input(backend: str) -> None:
    with pytest.raises(
        RuntimeError, match="mode 'reflect' needs non-negative padding of at most 3"
    ):
        tw.nn.functional.pad(tw.ones(1, 2, 4), (4, 0), mode="reflect")


@pytest.mark.parametrize(
    "kwargs",
    [{"kernel_size": 2}, {"kernel_size": (2, 3), "stride": 2, "padding": 1, "dilation": (2, 1)}],
)
def test_unfold(backend: str, kwargs: dict) -> None:
    check(lambda F, x: F.unfold(x, **kwargs), randn(2, 3, 6, 5))


def test_conv2d_rejects_bias_of_wrong_shape(backend: str) -> None:
    with pytest.raises(
        RuntimeError, match=r"expected bias of shape \(4,\).*got bias of shape \(3,\)"
    ):
        tw.nn.functional.conv2d(tw.ones(1, 2, 5, 5), tw.ones(4, 2, 3, 3), tw.ones(3))


def test_conv2d_rejects_channel_mismatch(backend: str) -> None:
    with pytest.raises(RuntimeError, match="expects input with 6 channels"):
        tw.nn.functional.conv2d(tw.ones(1, 4, 5, 5), tw.ones(4, 3, 3, 3), groups=2)


def test_conv2d_rejects_strided_same_padding(backend: str) -> None:
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
        tw.nn.functional.conv2d(tw.ones(1, 1, 5, 5), tw.ones(1, 1, 3, 3), stride=2, padding="same")


def test_conv2d_rejects_kernel_larger_than_input(backend: str) -> None:
    with pytest.raises(RuntimeError, match="the padded input is 2x2 but the"):
        tw.nn.functional.conv2d(tw.ones(1, 1, 2, 2), tw.ones(1, 1, 3, 3))


def test_gradcheck_conv2d(backend: str) -> None:
    gradcheck(
        lambda F, x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=(1, 2), groups=2),
        randn(1, 4, 5, 6),
        randn(2, 2, 2, 2, seed=1),
        randn(2, seed=2),
    )


def test_gradcheck_conv_transpose2d(backend: str) -> None:
    gradcheck(
        lambda F, x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
        randn(1, 2, 3, 3),
        randn(2, 2, 3, 3, seed=1),
    )
