"""Masked normalizations and scans: softmax, log_softmax, softmin, normalize, cumsum, cumprod.

The result has ``input``'s shape; masked-out elements enter as the identity of the underlying
reduction (-inf for softmax, so they get probability 0), and their own output values are
whatever the ordinary op gives there, as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable

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


def _softmax_like(name: str, identity_of: Callable, doc: str) -> Callable[..., Tensor]:
    """The masked ``softmax``, ``log_softmax`` or ``softmin``: ``tw.nn.functional.<name>``
    with masked-out elements entering as the identity of ``identity_of``."""

    def softmax_like(
        input: Tensor, dim: int, *, dtype: tw.dtype | None = None, mask: Tensor | None = None
    ) -> Tensor:
        dtype = input.dtype if dtype is None else dtype
        dim_ = _canonical_dim(dim, input.ndim)[0]
        mask_input = _combine_input_and_mask(identity_of, input, mask)
        return getattr(tw.nn.functional, name)(mask_input, dim_, dtype=dtype)

    softmax_like.__name__ = softmax_like.__qualname__ = name
    softmax_like.__doc__ = doc
    return softmax_like


softmax = _softmax_like(
    "softmax",
    amax,
    "Softmax along ``dim`` over the masked-in elements (NaN over fully masked-out rows).",
)
log_softmax = _softmax_like(
    "log_softmax", amax, "Log-softmax along ``dim`` over the masked-in elements."
)
softmin = _softmax_like(
    "softmin",
    amin,
    "Softmin along ``dim`` over the masked-in elements (masked-out ones enter as +inf).",
)


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
