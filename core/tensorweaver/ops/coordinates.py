"""Where a tensor is nonzero, as PyTorch spells it: ``tw.where(condition)`` (one argument)
and ``tw.argwhere``; the three-argument ``where`` is the elementwise select."""

from __future__ import annotations

from typing import Any

from tensorweaver.ops import elementwise
from tensorweaver.ops.index import nonzero
from tensorweaver.tensor import Tensor

_MISSING: Any = object()


def where(condition: Tensor, input: Any = _MISSING, other: Any = _MISSING) -> Any:
    """``where(condition, input, other)``: ``input`` where ``condition`` holds, else
    ``other``. ``where(condition)``: the tuple of index tensors of its nonzero elements,
    as ``nonzero(condition, as_tuple=True)``."""
    if input is _MISSING and other is _MISSING:
        if not isinstance(condition, Tensor):
            raise TypeError(
                f"where(condition): condition must be a tensor, got {type(condition).__name__}"
            )
        # A 0-d condition has one coordinate, as the one element of its 1-d view.
        return nonzero(condition if condition.ndim else condition.reshape(1), as_tuple=True)
    if input is _MISSING or other is _MISSING:
        raise TypeError(
            "where() takes a condition alone, or a condition, input and other: "
            "tw.where(cond) or tw.where(cond, input, other)"
        )
    return elementwise.where(condition, input, other)


def argwhere(input: Tensor) -> Tensor:
    """The indices of ``input``'s nonzero elements, one row each (``nonzero(input)``)."""
    return nonzero(input)
