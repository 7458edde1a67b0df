"""A U-Net (Ronneberger et al. 2015) for dense, per-pixel prediction such as segmentation."""

from __future__ import annotations

import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.tensor import Tensor

UPSAMPLE_MODES = ("transpose", "bilinear")


def double_conv(in_channels: int, out_channels: int, negative_slope: float = 0.0) -> nn.Sequential:
    """Two ``conv3x3 - InstanceNorm (affine) - ReLU`` stages (LeakyReLU when
    ``negative_slope`` > 0); the convolutions have no bias, as the norm removes it."""
    layers: list[nn.Module] = []
    for cin in (in_channels, out_channels):
        layers += [
            nn.Conv2d(cin, out_channels, 3, padding=1, bias=False),
            nn.InstanceNorm2d(out_channels, affine=True),
            nn.LeakyReLU(negative_slope) if negative_slope > 0 else nn.ReLU(),
        ]
    return nn.Sequential(*layers)


class UpBlock(nn.Module):
    """One decoder stage: upsample ``x`` by 2 while halving its channels, bring it to the
    skip connection's size, concatenate the skip and apply :func:`double_conv`.

    ``upsample="transpose"`` learns the upsampling (a 2x2 transposed convolution, stride 2)
    and zero-pads by one row or column where the encoder's pooling floored an odd size;
    ``"bilinear"`` interpolates straight to the skip's size, then a 1x1 convolution halves
    the channels.
    """

    def __init__(
        self, in_channels: int, upsample: str = "transpose", negative_slope: float = 0.0
    ) -> None:
        super().__init__()
        if upsample not in UPSAMPLE_MODES:
            raise ValueError(
                f"UpBlock: upsample must be one of {', '.join(UPSAMPLE_MODES)}, got {upsample!r}"
            )
        half = in_channels // 2
        self.mode = upsample
        self.up = (
            nn.ConvTranspose2d(in_channels, half, 2, stride=2)
            if upsample == "transpose"
            else nn.Conv2d(in_channels, half, 1)
        )
        self.conv = double_conv(in_channels, half, negative_slope)

    def forward(self, x: Tensor, skip: Tensor) -> Tensor:
        height, width = skip.shape[-2:]
        if self.mode == "bilinear":
            x = F.interpolate(x, size=(height, width), mode="bilinear", align_corners=False)
            x = self.up(x)
        else:
            x = self.up(x)
            dh, dw = height - x.shape[-2], width - x.shape[-1]
            if dh or dw:
                x = F.pad(x, (dw // 2, dw - dw // 2, dh // 2, dh - dh // 2))
        return self.conv(tw.cat([skip, x], dim=1))


class UNet(nn.Module):
    """A U-Net: an encoder of ``depth`` stages (:func:`double_conv`, then 2x2 max pooling;
    the channels start at ``base_channels`` and double each stage), a bottleneck, a decoder
    of ``depth`` :class:`UpBlock` stages that each concatenate the encoder's feature map of
    the same resolution (the skip connections), and a 1x1 convolution to ``out_channels``.

    Takes ``(N, in_channels, H, W)`` images of any size whose bottleneck keeps at least two
    pixels (odd sizes too) and returns ``(N, out_channels, H, W)`` per-pixel logits.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        base_channels: int = 16,
        depth: int = 3,
        upsample: str = "transpose",
        negative_slope: float = 0.0,
    ) -> None:
        super().__init__()
        if depth < 1 or base_channels < 1:
            raise ValueError(
                f"UNet: depth and base_channels must be positive, got depth={depth}, "
                f"base_channels={base_channels}"
            )
        widths = [base_channels * 2**i for i in range(depth + 1)]
        self.depth = depth
        self.down = nn.ModuleList(
            double_conv(cin, cout, negative_slope)
            for cin, cout in zip([in_channels, *widths[:-2]], widths[:-1])
        )
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = double_conv(widths[-2], widths[-1], negative_slope)
        self.up = nn.ModuleList(
            UpBlock(width, upsample, negative_slope) for width in reversed(widths[1:])
        )
        self.head = nn.Conv2d(base_channels, out_channels, 1)

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() != 4:
            raise ValueError(
                f"UNet: expected images of shape (N, C, H, W), got {tuple(x.shape)}; add the "
                "missing axes, e.g. x[:, None] for (N, H, W)"
            )
        height, width = x.shape[-2:]
        if (height >> self.depth) * (width >> self.depth) < 2:
            raise ValueError(
                f"UNet: images of {height}x{width} are too small for depth {self.depth}: the "
                f"bottleneck would be {height >> self.depth}x{width >> self.depth}, and instance "
                "norm needs at least 2 pixels; use larger images or a smaller depth"
            )
        skips = []
        for stage in self.down:
            x = stage(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottleneck(x)
        for block, skip in zip(self.up, reversed(skips)):
            x = block(x, skip)
        return self.head(x)
