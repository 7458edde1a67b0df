"""A small ResNet-style CNN (basic residual blocks, as in He et al. 2016) for small images."""

from __future__ import annotations

from collections.abc import Sequence

import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.tensor import Tensor


class BasicBlock(nn.Module):
    """``conv3x3-BN-ReLU-conv3x3-BN`` plus a shortcut (a strided 1x1 conv-BN where the shape
    changes), then ReLU."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x: Tensor) -> Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    """A 3x3 stem, then one stage of ``blocks`` basic blocks per entry of ``widths`` (every
    stage after the first halves the resolution), global average pooling and a linear head.

    Takes ``(N, in_channels, H, W)`` images and returns ``(N, num_classes)`` logits.
    """

    def __init__(
        self,
        in_channels: int = 1,
        num_classes: int = 10,
        widths: Sequence[int] = (16, 32),
        blocks: int = 1,
    ) -> None:
        super().__init__()
        if not widths or blocks < 1:
            raise ValueError(
                f"ResNet: needs at least one stage width and one block per stage, got "
                f"widths={tuple(widths)}, blocks={blocks}"
            )
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, widths[0], 3, padding=1, bias=False),
            nn.BatchNorm2d(widths[0]),
            nn.ReLU(),
        )
        stages: list[nn.Module] = []
        channels = widths[0]
        for i, width in enumerate(widths):
            for j in range(blocks):
                stride = 2 if i > 0 and j == 0 else 1
                stages.append(BasicBlock(channels, width, stride))
                channels = width
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(channels, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() != 4:
            raise ValueError(
                f"ResNet: expected images of shape (N, C, H, W), got {tuple(x.shape)}; reshape "
                "flat inputs, e.g. x.reshape(-1, 1, 8, 8)"
            )
        features = self.pool(self.stages(self.stem(x)))
        return self.head(features.flatten(1))
