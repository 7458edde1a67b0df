"""Conv3d, ConvTranspose3d, every padding_mode of Conv1d/2d/3d, and the resampling, shuffle
and fold layers against torch.nn (float64)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from module_reference import check_layer
from tensorweaver import nn

rng = np.random.default_rng(0)


KWARGS = {
    1: {"padding": 2, "stride": 2},
    2: {"padding": (1, 2), "dilation": (2, 1)},
    3: {"padding": "same", "groups": 2},
}


@pytest.mark.parametrize(
    ("padding_mode", "rank"),
    [("zeros", 3), ("reflect", 1), ("reflect", 3), ("replicate", 2), ("circular", 1),
     ("circular", 3)],
)  # fmt: skip
@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv_padding_modes(backend: str, padding_mode: str, rank: int) -> None:
    kwargs = KWARGS[rank]
    name = f"Conv{rank}d"
    args = (4, 2, (3, 2, 2)[:rank] if rank > 1 else 3)
    shape = (2, 4, *(6, 5, 4)[:rank])
    ours = getattr(nn, name)(*args, padding_mode=padding_mode, **kwargs)
    theirs = getattr(torch.nn, name)(*args, padding_mode=padding_mode, **kwargs)
    check_layer(ours, theirs, rng.standard_normal(shape))
    check_layer(ours, theirs, rng.standard_normal(shape[1:]))  # unbatched


def test_conv_transpose3d(backend: str) -> None:
    kwargs = {"stride": (2, 1, 2), "padding": 1, "output_padding": (1, 0, 0), "groups": 2}
    ours, theirs = (
        nn.ConvTranspose3d(4, 2, 3, **kwargs),
        torch.nn.ConvTranspose3d(4, 2, 3, **kwargs),
    )
    check_layer(ours, theirs, rng.standard_normal((2, 4, 3, 2, 3)))
    check_layer(ours, theirs, rng.standard_normal((2, 4, 3, 2, 3)), output_size=(6, 2, 5))


def test_conv3d_and_transpose3d_reprs_and_shapes() -> None:
    conv = nn.Conv3d(4, 6, (1, 2, 3), stride=2, groups=2, bias=False, padding_mode="circular")
    assert tuple(conv.weight.shape) == (6, 2, 1, 2, 3) and conv.bias is None
    assert repr(conv) == repr(
        torch.nn.Conv3d(4, 6, (1, 2, 3), stride=2, groups=2, bias=False, padding_mode="circular")
    )
    up = nn.ConvTranspose3d(4, 6, 2, groups=2, dilation=2)
    assert tuple(up.weight.shape) == (4, 3, 2, 2, 2)
    assert repr(up) == repr(torch.nn.ConvTranspose3d(4, 6, 2, groups=2, dilation=2))


def test_conv_transpose_rejects_other_padding_modes() -> None:
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported'):
        nn.ConvTranspose3d(2, 2, 2, padding_mode="reflect")


@pytest.mark.parametrize(
    ("ours", "theirs", "shape"),
    [
        (nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2), (1, 2, 3, 4)),
        (nn.Upsample(size=(5, 3), mode="bicubic", align_corners=True),
         torch.nn.Upsample(size=(5, 3), mode="bicubic", align_corners=True), (1, 2, 3, 4)),
        (nn.Upsample(scale_factor=(1.5, 2, 0.5), mode="trilinear"),
         torch.nn.Upsample(scale_factor=(1.5, 2, 0.5), mode="trilinear"), (1, 1, 2, 3, 4)),
        (nn.UpsamplingNearest2d(size=5), torch.nn.UpsamplingNearest2d(size=5), (1, 2, 3, 4)),
        (nn.UpsamplingBilinear2d(scale_factor=1.5), torch.nn.UpsamplingBilinear2d(scale_factor=1.5),
         (1, 2, 3, 4)),
        (nn.PixelShuffle(2), torch.nn.PixelShuffle(2), (1, 8, 2, 3)),
        (nn.PixelUnshuffle(2), torch.nn.PixelUnshuffle(2), (1, 2, 4, 6)),
        (nn.ChannelShuffle(3), torch.nn.ChannelShuffle(3), (2, 6, 2)),
        (nn.Unfold((2, 3), padding=1, stride=2), torch.nn.Unfold((2, 3), padding=1, stride=2),
         (2, 2, 5, 4)),
        (nn.Fold((4, 5), 2, dilation=(1, 2)), torch.nn.Fold((4, 5), 2, dilation=(1, 2)),
         (2, 3 * 4, 9)),
    ],
)  # fmt: skip
def test_parameterless_layers(backend: str, ours, theirs, shape: tuple) -> None:
    check_layer(ours, theirs, rng.standard_normal(shape))
    assert repr(ours) == repr(theirs)
