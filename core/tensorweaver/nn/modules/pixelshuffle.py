"""``PixelShuffle`` and ``PixelUnshuffle``: channels to pixel blocks and back."""

from __future__ import annotations

from tensorweaver.nn import functional as F
from tensorweaver.nn.modules.module import Module
from tensorweaver.tensor import Tensor


class PixelShuffle(Module):
    """``(*, C * r * r, H, W)`` to ``(*, C, H * r, W * r)``, ``r = upscale_factor``."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``(*, C, H * r, W * r)`` to ``(*, C * r * r, H, W)``, ``r = downscale_factor``."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
