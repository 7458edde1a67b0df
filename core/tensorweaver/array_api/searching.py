"""Searching functions: ``argmax``, ``argmin``, ``count_nonzero``, ``nonzero``,
``searchsorted``, ``where``."""

from __future__ import annotations

from typing import Literal, Optional, Union

import tensorweaver as tw
from tensorweaver.array_api.elementwise import promoted
from tensorweaver.array_api.statistical import axes_of
from tensorweaver.tensor import Tensor


def _arg(name: str, x: Tensor, axis: Optional[int], keepdims: bool) -> Tensor:
    if axis is None:
        out = getattr(tw, name)(x.reshape(-1), 0)
        return out.reshape((1,) * x.ndim) if keepdims else out
    return getattr(tw, name)(x, axis, keepdim=keepdims)


def argmax(x: Tensor, /, *, axis: Optional[int] = None, keepdims: bool = False) -> Tensor:
    """The index of the first largest element along ``axis`` (None: of the flattened ``x``)."""
    return _arg("argmax", x, axis, keepdims)


def argmin(x: Tensor, /, *, axis: Optional[int] = None, keepdims: bool = False) -> Tensor:
    """The index of the first smallest element along ``axis`` (None: of the flattened ``x``)."""
    return _arg("argmin", x, axis, keepdims)


def count_nonzero(
    x: Tensor, /, *, axis: Union[int, tuple, None] = None, keepdims: bool = False
) -> Tensor:
    """How many elements along ``axis`` are not zero."""
    axes = axes_of(x, axis)
    out = (x != 0).sum(axes, keepdim=keepdims) if axes else (x != 0).long()
    return out.to(tw.int64)


def nonzero(x: Tensor, /) -> tuple[Tensor, ...]:
    """The indices of the non-zero elements, one array per axis."""
    if x.ndim == 0:
        raise ValueError("nonzero: a 0-d array has no axes to index; reshape it to 1-d")
    return tuple(tw.nonzero(x, as_tuple=True))


def searchsorted(
    x1: Tensor,
    x2: Union[Tensor, int, float],
    /,
    *,
    side: Literal["left", "right"] = "left",
    sorter: Optional[Tensor] = None,
) -> Tensor:
    """Where the values ``x2`` go in the sorted 1-d ``x1``."""
    if not isinstance(x2, Tensor):
        x2 = tw.tensor(x2, dtype=x1.dtype, device=x1.device)
    a, b = promoted(x1, x2)
    # (the standard allows any integer sorter; torch's searchsorted takes int64 alone)
    return tw.searchsorted(a, b, side=side, sorter=None if sorter is None else sorter.long())


def where(
    condition: Tensor, x1: Union[Tensor, int, float], x2: Union[Tensor, int, float], /
) -> Tensor:
    """``x1`` where ``condition`` holds, else ``x2``."""
    a, b = promoted(x1, x2)
    return tw.where(condition, a, b)
