"""Sorting functions: ``sort`` and ``argsort`` with the standard's keywords."""

from __future__ import annotations

import tensorweaver as tw
from tensorweaver.tensor import Tensor


def sort(x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """``x`` sorted along ``axis``."""
    return tw.sort(x, dim=axis, descending=descending, stable=stable)[0]


def argsort(
    x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True
) -> Tensor:
    """The indices that sort ``x`` along ``axis`` (equal elements keep their order)."""
    return tw.sort(x, dim=axis, descending=descending, stable=stable)[1]
