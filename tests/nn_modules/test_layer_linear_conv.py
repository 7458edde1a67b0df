"""Linear, Bilinear, Identity and convolution layers against torch.nn (float64)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import check_layer
from tensorweaver import nn

rng = np.random.default_rng(0)


def test_linear(backend: str) -> None:
    check_layer(nn.Linear(5, 3), torch.nn.Linear(5, 3), rng.standard_normal((4, 5)))
    check_layer(nn.Linear(5, 3), torch.nn.Linear(5, 3), rng.standard_normal((2, 6, 5)))


def test_linear_without_bias(backend: str) -> None:
    layer = nn.Linear(4, 2, bias=False)
    assert layer.bias is None
    assert [n for n, _ in layer.named_parameters()] == ["weight"]
    check_layer(layer, torch.nn.Linear(4, 2, bias=False), rng.standard_normal((3, 4)))


def test_bilinear(backend: str) -> None:
    x1, x2 = rng.standard_normal((4, 3)), rng.standard_normal((4, 5))
    check_layer(nn.Bilinear(3, 5, 2), torch.nn.Bilinear(3, 5, 2), x1, x2)


def test_identity_ignores_arguments(backend: str) -> None:
    x = tw.randn(2, 3)
    assert nn.Identity(54, unused="x")(x) is x


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"stride": 2, "padding": 1},
        {"padding": 2, "dilation": 2, "bias": False},
        {"groups": 2},
        {"padding": "same", "dilation": 2},
        {"padding": "valid"},
        {"padding": 1, "padding_mode": "circular"},
        {"padding": 2, "padding_mode": "reflect"},
    ],
)
def test_conv1d(backend: str, kwargs: dict) -> None:
    check_layer(
        nn.Conv1d(4, 6, 3, **kwargs),
        torch.nn.Conv1d(4, 6, 3, **kwargs),
        rng.standard_normal((2, 4, 9)),
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"stride": (2, 1), "padding": (1, 2)},
        {"dilation": 2, "bias": False},
        {"groups": 2, "padding": 1},
        {"padding": "same"},
        {"padding": 1, "padding_mode": "replicate"},
    ],
)
def test_conv2d(backend: str, kwargs: dict) -> None:
    check_layer(
        nn.Conv2d(2, 4, 3, **kwargs),
        torch.nn.Conv2d(2, 4, 3, **kwargs),
        rng.standard_normal((2, 2, 7, 6)),
    )


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")  # PyTorch's note
def test_conv2d_even_kernel_same_padding(backend: str) -> None:
    # An even kernel pads asymmetrically (one more on the right/bottom).
    check_layer(
        nn.Conv2d(2, 3, (2, 4), padding="same"),
        torch.nn.Conv2d(2, 3, (2, 4), padding="same"),
        rng.standard_normal((1, 2, 5, 6)),
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"stride": 2, "padding": 1, "output_padding": 1},
        {"groups": 2, "dilation": 2, "bias": False},
    ],
)
def test_conv_transpose2d(backend: str, kwargs: dict) -> None:
    check_layer(
        nn.ConvTranspose2d(4, 6, 3, **kwargs),
        torch.nn.ConvTranspose2d(4, 6, 3, **kwargs),
        rng.standard_normal((2, 4, 5, 5)),
    )


@pytest.mark.parametrize("kwargs", [{}, {"stride": 3, "padding": 2, "output_padding": 1}])
def test_conv_transpose1d(backend: str, kwargs: dict) -> None:
    check_layer(
        nn.ConvTranspose1d(2, 4, 3, **kwargs),
        torch.nn.ConvTranspose1d(2, 4, 3, **kwargs),
        rng.standard_normal((2, 2, 6)),
    )
    check_layer(
        nn.ConvTranspose1d(2, 4, 3, stride=2),
        torch.nn.ConvTranspose1d(2, 4, 3, stride=2),
        rng.standard_normal((2, 2, 6)),
        output_size=[14],
    )


def test_conv_transpose2d_output_size(backend: str) -> None:
    out = check_layer(
        nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1),
        torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1),
        rng.standard_normal((1, 2, 4, 4)),
        output_size=[8, 8],
    )
    assert tuple(out.shape) == (1, 3, 8, 8)
    with pytest.raises(ValueError, match="output size"):
        nn.ConvTranspose2d(2, 3, 3, stride=2)(tw.randn(1, 2, 4, 4), output_size=(20, 20))


def test_conv_weight_shapes_and_repr() -> None:
    assert tuple(nn.Conv2d(4, 6, (3, 5), groups=2).weight.shape) == (6, 2, 3, 5)
    assert tuple(nn.ConvTranspose2d(4, 6, 3, groups=2).weight.shape) == (4, 3, 3, 3)
    for kwargs in (
        {},
        {"stride": 2, "padding": "valid"},
        {"padding": "same", "bias": False},
        {"dilation": 2, "groups": 2, "padding_mode": "reflect", "padding": 1},
    ):
        assert repr(nn.Conv2d(4, 6, 3, **kwargs)) == repr(torch.nn.Conv2d(4, 6, 3, **kwargs))
    assert repr(nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1)) == repr(
        torch.nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1)
    )
    assert repr(nn.Linear(3, 2, bias=False)) == repr(torch.nn.Linear(3, 2, bias=False))
    assert repr(nn.Bilinear(3, 4, 2)) == repr(torch.nn.Bilinear(3, 4, 2))


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((3, 4, 3), {"groups": 2}, "in_channels"),
        ((4, 3, 3), {"groups": 2}, "out_channels"),
        ((4, 4, 3), {"groups": 0}, "groups"),
        ((4, 4, 3), {"padding": "full"}, "padding string"),
        ((4, 4, 3), {"padding": "same", "stride": 2}, "strided"),
        ((4, 4, 3), {"padding_mode": "mirror"}, "padding_mode"),
    ],
)
def test_conv_rejects_bad_arguments(args: tuple, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        nn.Conv2d(*args, **kwargs)
