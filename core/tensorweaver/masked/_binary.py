"""Masked elementwise ``logaddexp``: each operand has its own mask."""

from __future__ import annotations

import tensorweaver as tw
from tensorweaver.masked._mask import _combine_input_and_mask
from tensorweaver.tensor import Tensor


def logaddexp(
    input: Tensor,
    other: Tensor,
    *,
    dtype: tw.dtype | None = None,
    input_mask: Tensor | None = None,
    other_mask: Tensor | None = None,
) -> Tensor:
    """``log(exp(input) + exp(other))`` where a masked-out element counts as ``exp(x) = 0``."""
    dtype = input.dtype if dtype is None else dtype
    mask_input = _combine_input_and_mask(logaddexp, input, input_mask)
    mask_other = _combine_input_and_mask(logaddexp, other, other_mask)
    return tw.logaddexp(mask_input, mask_other).to(dtype=dtype)
