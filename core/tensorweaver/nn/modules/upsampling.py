"""Resampling layers: ``Upsample``, ``UpsamplingNearest2d``, ``UpsamplingBilinear2d``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional, Union

from tensorweaver.nn import functional as F
from tensorweaver.nn.modules.module import Module
from tensorweaver.tensor import Tensor

Size = Optional[Union[int, Sequence[int]]]
Scale = Optional[Union[float, Sequence[float]]]


class Upsample(Module):
    """:func:`F.interpolate <tensorweaver.nn.functional.interpolate>` as a layer."""

    def __init__(
        self,
        size: Size = None,
        scale_factor: Scale = None,
        mode: str = "nearest",
        align_corners: Optional[bool] = None,
        recompute_scale_factor: Optional[bool] = None,
    ) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor = (
            tuple(float(s) for s in scale_factor)
            if isinstance(scale_factor, (list, tuple))
            else None
            if scale_factor is None
            else float(scale_factor)
        )
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of ``(N, C, H, W)`` inputs (prefer :class:`Upsample`)."""

    def __init__(self, size: Size = None, scale_factor: Scale = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling with ``align_corners=True`` of ``(N, C, H, W)`` inputs (prefer
    :class:`Upsample`)."""

    def __init__(self, size: Size = None, scale_factor: Scale = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
