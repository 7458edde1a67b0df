"""Indexing functions: ``take`` and ``take_along_axis``."""

from __future__ import annotations

from typing import Optional

import tensorweaver as tw
from tensorweaver.tensor import Tensor


def take(x: Tensor, indices: Tensor, /, *, axis: Optional[int] = None) -> Tensor:
    """The elements of ``x`` at ``indices`` (1-d) along ``axis`` (optional for a 1-d ``x``)."""
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required for an array of {x.ndim} dimensions")
        axis = 0
    return tw.index_select(x, axis, _wrapped(indices, x.shape[axis]))


def take_along_axis(x: Tensor, indices: Tensor, /, *, axis: int = -1) -> Tensor:
    """The elements of ``x`` at ``indices``, an array of ``x``'s dimensions, along ``axis``."""
    return tw.take_along_dim(x, _wrapped(indices, x.shape[axis]), dim=axis)


def _wrapped(indices: Tensor, size: int) -> Tensor:
    """``indices`` with negative ones counted from the end, as the standard allows."""
    return tw.where(indices < 0, indices + size, indices)
