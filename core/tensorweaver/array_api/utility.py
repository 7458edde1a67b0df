"""Utility functions: ``all``, ``any``, ``diff``."""

from __future__ import annotations

from typing import Optional, Union

import tensorweaver as tw
from tensorweaver.array_api.statistical import axes_of
from tensorweaver.tensor import Tensor

Axis = Union[int, tuple, None]


def _logical(name: str, x: Tensor, axis: Axis, keepdims: bool) -> Tensor:
    axes = axes_of(x, axis)
    if not axes or x.ndim == 0:
        return x != 0
    return getattr(tw, name)(x, dim=axes, keepdim=keepdims)


def all(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether every element along ``axis`` is true (non-zero)."""
    return _logical("all", x, axis, keepdims)


def any(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether some element along ``axis`` is true (non-zero)."""
    return _logical("any", x, axis, keepdims)


def diff(
    x: Tensor,
    /,
    *,
    axis: int = -1,
    n: int = 1,
    prepend: Optional[Tensor] = None,
    append: Optional[Tensor] = None,
) -> Tensor:
    """The ``n``-th differences along ``axis`` (of ``x`` with ``prepend``/``append`` added)."""
    return tw.diff(x, n=n, dim=axis, prepend=prepend, append=append)
