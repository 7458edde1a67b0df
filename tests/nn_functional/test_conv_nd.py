"""conv1d/conv3d and the transposed convolutions in 1, 2 and 3 dimensions against
torch.nn.functional: every argument, batched and unbatched, float64 and float32."""

from __future__ import annotations

import pytest
import tensorweaver as tw
from functional_reference import check, gradcheck, randn
from tw_backends import entered

CONV3D = [
    ((2, 3, 5, 4, 6), (4, 3, 3, 2, 3), {}),
    ((2, 4, 5, 6, 5), (6, 2, 2, 3, 2), {"stride": (1, 2, 2), "padding": (1, 0, 2), "groups": 2}),
    ((1, 2, 7, 5, 6), (3, 2, 2, 2, 3), {"dilation": (2, 1, 2), "padding": 1, "stride": 2}),
    ((2, 3, 4, 5, 6), (2, 3, 2, 3, 4), {"padding": "same"}),
    ((2, 3, 6, 5, 5), (2, 3, 3, 2, 2), {"padding": "same", "dilation": (1, 2, 1)}),
    ((2, 3, 4, 5, 6), (2, 3, 3, 3, 3), {"padding": "valid"}),
    ((3, 4, 5, 6), (2, 3, 2, 2, 2), {"padding": (0, 1, 1)}),  # unbatched
]


@pytest.mark.parametrize(("case", "bias"), [(c, i % 2 == 0) for i, c in enumerate(CONV3D)])
@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv3d(backend: str, case: tuple, bias: bool) -> None:
    x_shape, w_shape, kwargs = case
    arrays = [randn(*x_shape), randn(*w_shape, seed=1)]
    if bias:
        arrays.append(randn(w_shape[0], seed=2))
    check(lambda F, x, w, *b: F.conv3d(x, w, *b, **kwargs), *arrays)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "kwargs"),
    [
        ((2, 4, 11), (6, 2, 4), {"stride": 3, "padding": "valid", "dilation": 2, "groups": 2}),
        ((2, 3, 8), (2, 3, 4), {"padding": "same", "dilation": 3}),
        ((3, 1), (2, 3, 1), {}),  # unbatched, a length of one
    ],
)
def test_conv1d_more_options(backend: str, x_shape: tuple, w_shape: tuple, kwargs: dict) -> None:
    check(
        lambda F, x, w, b: F.conv1d(x, w, b, **kwargs),
        randn(*x_shape),
        randn(*w_shape, seed=1),
        randn(w_shape[0], seed=2),
    )


TRANSPOSED = [
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), {"stride": 3, "padding": 2, "output_padding": 1}),
    ("conv_transpose1d", (4, 6), (4, 1, 2), {"groups": 2, "dilation": 3, "output_padding": 2}),
    ("conv_transpose2d", (2, 4, 3, 5), (4, 3, 3, 2), {"stride": (2, 3), "groups": 2,
                                                      "output_padding": (1, 2)}),
    ("conv_transpose2d", (1, 2, 4, 3), (2, 2, 2, 3), {"padding": (1, 2), "dilation": (2, 1)}),
    ("conv_transpose3d", (2, 2, 3, 4, 3), (2, 3, 2, 3, 2), {}),
    ("conv_transpose3d", (1, 4, 3, 2, 3), (4, 1, 3, 2, 2), {"stride": (2, 1, 3), "groups": 2,
        "padding": (1, 0, 1), "output_padding": (1, 0, 2), "dilation": (1, 2, 1)}),
    ("conv_transpose3d", (2, 3, 2, 3), (2, 2, 2, 2, 2), {"stride": 2}),  # unbatched
]  # fmt: skip


@pytest.mark.parametrize(("case", "bias"), [(c, i % 2 == 1) for i, c in enumerate(TRANSPOSED)])
def test_conv_transpose(backend: str, case: tuple, bias: bool) -> None:
    fn, x_shape, w_shape, kwargs = case
    arrays = [randn(*x_shape), randn(*w_shape, seed=1)]
    if bias:
        arrays.append(randn(w_shape[1] * kwargs.get("groups", 1), seed=2))
    check(lambda F, x, w, *b: getattr(F, fn)(x, w, *b, **kwargs), *arrays)


@pytest.mark.parametrize("fn", ["conv3d", "conv_transpose3d"])
def test_float32_within_float32_tolerance(backend: str, fn: str) -> None:
    arrays = [randn(2, 4, 5, 4, 5), randn(4, 2, 3, 2, 3, seed=1), randn(4, seed=2)]
    kwargs = {"stride": 2, "padding": 1, "groups": 2}
    check(
        lambda F, x, w, b: getattr(F, fn)(x, w, b, **kwargs),
        *(a.astype("float32") for a in arrays),
        rtol=2e-5,
        atol=2e-5,
    )


def test_gradcheck_conv3d(backend: str) -> None:
    gradcheck(
        lambda F, x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=1, groups=2),
        randn(1, 2, 3, 4, 3),
        randn(2, 1, 2, 2, 2, seed=1),
        randn(2, seed=2),
    )


def test_gradcheck_conv_transpose3d(backend: str) -> None:
    gradcheck(
        lambda F, x, w: F.conv_transpose3d(x, w, stride=2, padding=1, output_padding=(1, 0, 1)),
        randn(1, 2, 2, 3, 2),
        randn(2, 1, 3, 2, 3, seed=1),
    )


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda F: F.conv3d(tw.ones(2, 4, 4), tw.ones(1, 2, 2, 2, 2)), RuntimeError,
         r"expected a 4-D \(unbatched\) or 5-D \(batched\) input"),
        (lambda F: F.conv3d(tw.ones(1, 4, 4, 4, 4), tw.ones(2, 3, 2, 2, 2)), RuntimeError,
         "expects input with 3 channels"),
        (lambda F: F.conv3d(tw.ones(1, 1, 2, 4, 4), tw.ones(1, 1, 3, 3, 3)), RuntimeError,
         "the padded input is 2x4x4 but the"),
        (lambda F: F.conv3d(tw.ones(1, 1, 4, 4, 4), tw.ones(1, 1, 3, 3, 3), stride=2,
                            padding="same"), RuntimeError, "padding='same' is not supported"),
        (lambda F: F.conv_transpose3d(tw.ones(1, 2, 2, 2, 2), tw.ones(2, 1, 2, 2, 2),
                                      output_padding=1), RuntimeError,
         "output_padding .* must be smaller than stride"),
        (lambda F: F.conv_transpose1d(tw.ones(1, 2, 2), tw.ones(2, 1, 2), padding=3), RuntimeError,
         "would have spatial size"),
        (lambda F: F.conv_transpose2d(tw.ones(1, 2, 3, 3), tw.ones(2, 2, 2, 2), tw.ones(3)),
         RuntimeError, r"expected bias of shape \(2,\)"),
    ],
)  # fmt: skip
def test_errors_name_the_function_and_shapes(backend: str, call, error, match: str) -> None:
    with pytest.raises(error, match=match):
        call(tw.nn.functional)


def test_conv3d_and_transpose_on_cunumeric() -> None:
    with entered("cunumeric"):
        check(
            lambda F, x, w: F.conv_transpose3d(F.conv3d(x, w, padding=1), w, stride=2),
            randn(1, 2, 3, 3, 2),
            randn(2, 2, 2, 2, 2, seed=1),
        )
