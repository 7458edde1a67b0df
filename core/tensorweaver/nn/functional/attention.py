"""``scaled_dot_product_attention``: softmax(q @ k^T * scale + mask) @ v.

Without dropout it is a composite a backend may fuse (flash attention), masked or not;
with dropout, a mask that requires grad, or a masked call on a backend whose fused kernel
predates masks (no ``mask`` parameter), it runs the same decomposition here.
Rows whose every key is masked give zeros, as PyTorch's kernels do.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import tensorweaver as tw
from tensorweaver.nn.functional.activation import softmax
from tensorweaver.nn.functional.dropout import dropout
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.ops.elementwise import refuse_complex
from tensorweaver.tensor import Tensor


def _safe_softmax(scores: Tensor) -> Tensor:
    """softmax over the last axis, with rows that are all -inf giving zeros instead of NaN
    (and a zero gradient). The softmax composite runs on the other rows (one fused kernel
    each way where the backend has one); a dead row enters it as zeros, so no NaN arises."""
    with tw.no_grad():
        dead = scores.amax(-1, keepdim=True) == float("-inf")
    return softmax(scores.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)


def _attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Tensor | None,
    causal: bool,
    dropout_p: float,
    scale: float,
) -> Tensor:
    scores = (q @ k.transpose(-2, -1)) * scale
    if causal:
        # Aligned at the top left: query i sees keys 0..i, whatever the two lengths.
        length, source = scores.shape[-2:]
        allowed = tw.ones(length, source, dtype=tw.bool, device=q.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    if attn_mask is None:
        weights = softmax(scores, -1)
    else:
        if attn_mask.dtype is tw.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
        weights = _safe_softmax(scores)
    if dropout_p:
        weights = dropout(weights, dropout_p)
    return weights @ v


def scaled_dot_product_attention_reference(
    q: Tensor, k: Tensor, v: Tensor, causal: bool, scale: float
) -> Tensor:
    """Attention of ``(..., L, E)`` queries over ``(..., S, E)`` keys and ``(..., S, Ev)``
    values (the decomposition of the ``scaled_dot_product_attention`` composite, as a
    backend without a ``mask`` parameter is called)."""
    return _attend(q, k, v, None, causal, 0.0, scale)


def _masked_reference(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, causal: bool, scale: float
) -> Tensor:
    """The composite's decomposition with its ``mask`` argument (None: no mask)."""
    return _attend(q, k, v, mask, causal, 0.0, scale)


#: Whether a backend class's fused kernel takes the mask, by class.
_TAKES_MASK: dict[type, bool] = {}


def _takes_mask(backend: Any) -> bool:
    """Whether ``backend``'s ``fused_scaled_dot_product_attention`` has a ``mask`` parameter
    (checked once per backend class: kernels written before masks keep their call)."""
    kind = type(backend)
    found = _TAKES_MASK.get(kind)
    if found is None:
        # The class's method: tw.compile's recorder shadows the instance's with a wrapper of
        # its own signature while it traces.
        fused = getattr(kind, "fused_scaled_dot_product_attention", None)
        if fused is None:
            fused = getattr(backend, "fused_scaled_dot_product_attention", None)
        found = fused is not None and "mask" in inspect.signature(fused).parameters
        _TAKES_MASK[kind] = found
    return found


def _checked_mask(fn: str, mask: Tensor, query: Tensor, scores: tuple) -> Tensor:
    """``mask`` as the kernels take it: PyTorch accepts a bool mask, a float32 one (cast
    here to the query's dtype) or one of the query's dtype, broadcastable to the shape of
    the ``scores`` ``(..., L, S)``."""
    if mask.dtype is not tw.bool and mask.dtype is not query.dtype:
        if mask.dtype is not tw.float32:
            raise RuntimeError(
                f"{fn}: attn_mask must be bool, float32 or of the query's dtype "
                f"({query.dtype}), got {mask.dtype}; convert it with .to({query.dtype})"
            )
        mask = mask.to(query.dtype)
    shape = mask.shape
    # (broadcast_shapes(shape, scores) == scores, without its 8 us on the hot path)
    if len(shape) > len(scores) or any(
        m != s and m != 1 for m, s in zip(reversed(shape), reversed(scores))
    ):
        raise RuntimeError(
            f"{fn}: attn_mask of shape {tuple(mask.shape)} does not broadcast to the "
            f"attention scores' shape {scores} (..., L, S)"
        )
    return mask


def _repeat_heads(x: Tensor, heads: int) -> Tensor:
    """``(..., H, S, E)`` with each head repeated to make ``heads`` (grouped-query attention)."""
    return x.repeat_interleave(heads // x.shape[-3], dim=-3)


def _flash_path(query: Tensor, key: Tensor, value: Tensor, dropout_p: float) -> bool:
    """Whether PyTorch's CPU kernel choice would take its flash path, which applies an
    ``attn_mask`` and ``is_causal`` together: 4-D inputs, no dropout, equal head sizes."""
    return (
        query.dim() == key.dim() == value.dim() == 4
        and dropout_p == 0
        and value.shape[-1] == query.shape[-1]
    )


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(query @ key^T * scale + mask) @ value over ``(..., L, E)``, ``(..., S, E)`` and
    ``(..., S, Ev)``; a bool mask keeps where True, a float mask is added; ``scale``
    defaults to 1 / sqrt(E)."""
    fn = "scaled_dot_product_attention"
    if min(query.dim(), key.dim(), value.dim()) < 2 or (
        query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]
    ):
        raise RuntimeError(
            f"{fn}: expected query (..., L, E), key (..., S, E) and value (..., S, Ev), got "
            f"{tuple(query.shape)}, {tuple(key.shape)} and {tuple(value.shape)}"
        )
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(
            f"{fn}: dropout probability has to be between 0 and 1, but got {dropout_p}"
        )
    if is_causal and attn_mask is not None and not _flash_path(query, key, value, dropout_p):
        # (PyTorch applies both on its CPU flash path and refuses them on its math path)
        raise RuntimeError(
            f"{fn}: give either attn_mask or is_causal=True, not both, unless query, key and "
            "value are 4-D with equal head sizes and dropout_p is 0"
        )
    if enable_gqa:
        heads = query.shape[-3]
        if heads % key.shape[-3] or heads % value.shape[-3]:
            raise RuntimeError(
                f"{fn}: with enable_gqa the {heads} query heads must be a multiple of the key "
                f"and value heads ({key.shape[-3]}, {value.shape[-3]})"
            )
        key, value = _repeat_heads(key, heads), _repeat_heads(value, heads)
    # The leading (batch, head) axes broadcast, as the matrix products' batches do.
    lead = query.shape[:-2]
    if not lead == key.shape[:-2] == value.shape[:-2]:
        lead = tw.broadcast_shapes(lead, key.shape[:-2], value.shape[:-2])
    if attn_mask is not None:
        attn_mask = _checked_mask(fn, attn_mask, query, (*lead, query.shape[-2], key.shape[-2]))
    refuse_complex(  # (PyTorch's softmax kernel has no complex form)
        fn, "not implemented for complex tensors (as in PyTorch)", query, key, value
    )
    if scale is None:
        # With no features every score is an empty sum, 0 at any scale (PyTorch too)
        scale = 1 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
    if dropout_p:
        return _attend(query, key, value, attn_mask, is_causal, dropout_p, scale)
    if _takes_mask(query.backend):
        # The mask never needs a gradient from the kernel: one that requires it is decomposed.
        if attn_mask is None or not (attn_mask.requires_grad and tw.is_grad_enabled()):
            return fused_or_reference(
                fn, _masked_reference, (query, key, value, attn_mask), is_causal, scale
            )
    elif attn_mask is None:
        return fused_or_reference(
            fn, scaled_dot_product_attention_reference, (query, key, value), is_causal, scale
        )
    return _attend(query, key, value, attn_mask, is_causal, dropout_p, scale)
