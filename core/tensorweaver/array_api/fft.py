"""The standard's ``fft`` extension over ``tw.fft``: the same transforms, with the standard's
keywords (``axis``/``axes`` where PyTorch says ``dim``; ``norm`` as both define it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Optional

import tensorweaver.fft as tw_fft
from tensorweaver.contract.dtypes import DType
from tensorweaver.tensor import Tensor

__all__ = [
    "fft",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfftn",
    "rfft",
    "rfftfreq",
    "rfftn",
]

Axes = Optional[Sequence[int]]


def _one_axis(transform: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def function(
        x: Tensor, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward"
    ) -> Tensor:
        return transform(x, n=n, dim=axis, norm=norm)

    function.__name__ = function.__qualname__ = transform.__name__
    function.__doc__ = f"``tw.fft.{transform.__name__}`` with the standard's keywords."
    return function


def _many_axes(transform: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def function(
        x: Tensor, /, *, s: Axes = None, axes: Axes = None, norm: str = "backward"
    ) -> Tensor:
        return transform(
            x,
            s=None if s is None else tuple(s),
            dim=None if axes is None else tuple(axes),
            norm=norm,
        )

    function.__name__ = function.__qualname__ = transform.__name__
    function.__doc__ = f"``tw.fft.{transform.__name__}`` with the standard's keywords."
    return function


fft = _one_axis(tw_fft.fft)
ifft = _one_axis(tw_fft.ifft)
rfft = _one_axis(tw_fft.rfft)
irfft = _one_axis(tw_fft.irfft)
hfft = _one_axis(tw_fft.hfft)
ihfft = _one_axis(tw_fft.ihfft)
fftn = _many_axes(tw_fft.fftn)
ifftn = _many_axes(tw_fft.ifftn)
rfftn = _many_axes(tw_fft.rfftn)
irfftn = _many_axes(tw_fft.irfftn)


def fftfreq(
    n: int, /, *, d: float = 1.0, dtype: Optional[DType] = None, device: Any = None
) -> Tensor:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``."""
    return tw_fft.fftfreq(n, d, dtype=dtype, device=device)


def rfftfreq(
    n: int, /, *, d: float = 1.0, dtype: Optional[DType] = None, device: Any = None
) -> Tensor:
    """The non-negative sample frequencies of ``rfft``'s output."""
    return tw_fft.rfftfreq(n, d, dtype=dtype, device=device)


def fftshift(x: Tensor, /, *, axes: Axes = None) -> Tensor:
    """The zero frequency moved to the centre of ``axes`` (all axes by default)."""
    return tw_fft.fftshift(x, None if axes is None else tuple(axes))


def ifftshift(x: Tensor, /, *, axes: Axes = None) -> Tensor:
    """The inverse of :func:`fftshift`."""
    return tw_fft.ifftshift(x, None if axes is None else tuple(axes))
