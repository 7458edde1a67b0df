"""The history of a base written through an ``expand()`` view that repeats its elements
(only a fill may: ``tensor.py`` ``_write_overlapping``), as PyTorch's CopySlices gives it:
the written value's gradient at each copy is its base element's (summed over the copies
that read it), and a backward that needs a gradient for the base's own history raises."""

from __future__ import annotations

from typing import Any

from tensorweaver.autograd.function import Function
from tensorweaver.ops.index import through_repeats
from tensorweaver.tensor import Tensor


class _ThroughCopies(Function):
    """``merged`` (the base's new array) from ``value`` (the view's new value) and ``base``
    (the base before the write), with the gradients PyTorch's CopySlices hands them."""

    @staticmethod
    def forward(ctx: Any, value: Tensor, base: Tensor, merged: Any, padded: tuple) -> Tensor:
        ctx.padded, ctx.shape = padded, tuple(value.shape)
        return Tensor(merged, base.backend, base.dtype)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        copies = g.reshape(ctx.padded).expand(ctx.shape) if ctx.needs_input_grad[0] else None
        # (the base's own history raises where a pass needs it: see through_repeats)
        return copies, g if ctx.needs_input_grad[1] else None, None, None


def through_copies(value: Tensor, base: Tensor, merged: Any, padded: tuple) -> Tensor:
    """``merged``, the array ``base`` takes from the write of ``value`` into its ``expand()``
    view (``padded``: ``base``'s shape with the view's leading axes as 1s), on that write's
    history."""
    base = through_repeats(base, "a fill through expand()")
    return _ThroughCopies.apply(value, base, merged, padded)
