"""Masked normalizations and scans: softmax, log_softmax, softmin, normalize, cumsum, cumprod.

The result has ``input``'s shape; masked-out elements enter as the identity of the underlying
reduction (-inf for softmax, so they get probability 0), and their own output values are
whatever the ordinary op gives there, as in PyTorch.
"""

from __future__ import annotations

import tensorweaver as tw
from tensorweaver.masked._mask import _canonical_dim, _combine_input_and_mask
from tensorweaver.masked._reductions import amax, amin, norm, prod, sum
from tensorweaver.tensor import Tensor


def cumsum(
    input: Tensor, dim: int, *, dtype: tw.dtype | None = None, mask: Tensor | None = None
) -> Tensor:
    """Running sum along ``dim`` that skips masked-out elements."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    return tw.cumsum(_combine_input_and_mask(sum, input, mask), dim_, dtype=dtype).to(dtype=dtype)


def cumprod(
    input: Tensor, dim: int, *, dtype: tw.dtype | None = None, mask: Tensor | None = None
) -> Tensor:
    """Running product along ``dim`` that skips masked-out elements."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(prod, input, mask)
    return tw.cumprod(mask_input, dim_, dtype=dtype).to(dtype=dtype)


def softmax(
    input: Tensor, dim: int, *, dtype: tw.dtype | None = None, mask: Tensor | None = None
) -> Tensor:
    """Softmax along ``dim`` over the masked-in elements (NaN over fully masked-out rows)."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(amax, input, mask)
    return tw.nn.functional.softmax(mask_input, dim_, dtype=dtype)


def log_softmax(
    input: Tensor, dim: int, *, dtype: tw.dtype | None = None, mask: Tensor | None = None
) -> Tensor:
    """Log-softmax along ``dim`` over the masked-in elements."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(amax, input, mask)
    return tw.nn.functional.log_softmax(mask_input, dim_, dtype=dtype)


def softmin(
    input: Tensor, dim: int, *, dtype: tw.dtype | None = None, mask: Tensor | None = None
) -> Tensor:
    """Softmin along ``dim`` over the masked-in elements (masked-out ones enter as +inf)."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    mask_input = _combine_input_and_mask(amin, input, mask)
    return tw.nn.functional.softmin(mask_input, dim_, dtype=dtype)


def normalize(
    input: Tensor,
    ord: float,
    dim: int,
    *,
    eps: float = 1e-12,
    dtype: tw.dtype | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """``input`` divided by the ``ord``-norm of its masked-in elements along ``dim`` (at least
    ``eps``); masked-out elements become 0."""
    dtype = input.dtype if dtype is None else dtype
    mask_input = _combine_input_and_mask(sum, input, mask)
    nrm_ = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return tw.divide(mask_input, tw.maximum(nrm_, nrm_.new_full([], eps)))
