"""``multi_head_attention_forward``: PyTorch's functional multi-head attention (the forward of
``nn.MultiheadAttention``), with its arguments, checks, exception classes and masks."""

from __future__ import annotations

import math
import warnings
from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.autograd.function import Function, FunctionCtx
from tensorweaver.autograd.node import InputShape, Node, output_node
from tensorweaver.nn.functional.activation import softmax
from tensorweaver.nn.functional.attention import scaled_dot_product_attention
from tensorweaver.nn.functional.conv import pad
from tensorweaver.nn.functional.dropout import dropout
from tensorweaver.nn.functional.linear import linear
from tensorweaver.ops import movement as mv
from tensorweaver.ops.apply import all_inference
from tensorweaver.ops.creation import zeros_like_shape
from tensorweaver.tensor import Tensor


def _is_batched(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    key_padding_mask: Optional[Tensor],
    attn_mask: Optional[Tensor],
    num_heads: int,
) -> bool:
    """Whether the inputs are batched (3-D) rather than unbatched (2-D); AssertionError, as
    PyTorch, when the ranks of the inputs and masks do not fit together."""
    if query.dim() not in (2, 3):
        raise AssertionError(
            "multi_head_attention_forward: query should be unbatched 2D or batched 3D tensor "
            f"but received {query.dim()}-D query tensor"
        )
    batched = query.dim() == 3
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    if key.dim() != query.dim() or value.dim() != query.dim():
        raise AssertionError(
            f"For {kind} `query`, expected `key` and `value` to be {query.dim()}-D but found "
            f"{key.dim()}-D and {value.dim()}-D tensors respectively"
        )
    if key_padding_mask is not None and key_padding_mask.dim() != query.dim() - 1:
        raise AssertionError(
            f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
            f"{query.dim() - 1}-D but found {key_padding_mask.dim()}-D tensor instead"
        )
    if attn_mask is not None:
        if attn_mask.dim() not in (2, 3):
            raise AssertionError(
                f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                f"{attn_mask.dim()}-D tensor instead"
            )
        expected = (num_heads, query.shape[0], key.shape[0])
        if not batched and attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
            raise AssertionError(
                f"Expected `attn_mask` shape to be {expected} but got {tuple(attn_mask.shape)}"
            )
    return batched


def canonical_mask(
    mask: Optional[Tensor],
    name: str,
    dtype: Any,
    other: Optional[Tensor] = None,
    other_name: str = "",
) -> Optional[Tensor]:
    """``mask`` as a float mask of ``dtype`` to add to the scores (a bool mask's True becomes
    -inf; a float mask passes unchanged). Other dtypes raise AssertionError, and a mask whose
    dtype differs from ``other``'s warns, as PyTorch (mixing them is deprecated there)."""
    if mask is None:
        return None
    if mask.dtype is not tw.bool and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if other is not None and other.dtype is not mask.dtype:
        warnings.warn(
            f"Support for mismatched {name} and {other_name} is deprecated. Use same type for "
            "both instead.",
            stacklevel=3,
        )
    if mask.dtype is tw.bool:
        return tw.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(
            mask, float("-inf")
        )
    return mask


def _packed_projection(
    query: Tensor, key: Tensor, value: Tensor, weight: Tensor, bias: Optional[Tensor]
) -> tuple[Tensor, ...]:
    """``q, k, v`` from the packed ``(3E, E)`` weight; one product serves the inputs that
    are the same tensor (self-attention, or the keys and values of encoder-decoder
    attention)."""
    if key is value:
        if query is key:
            return linear(query, weight, bias).chunk(3, -1)
        embed = query.shape[-1]
        w_q, w_kv = weight.split([embed, 2 * embed])
        b_q, b_kv = (None, None) if bias is None else bias.split([embed, 2 * embed])
        return (linear(query, w_q, b_q), *linear(key, w_kv, b_kv).chunk(2, -1))
    w_q, w_k, w_v = weight.chunk(3)
    b_q, b_k, b_v = (None, None, None) if bias is None else bias.chunk(3)
    return linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)


def _self_attention_heads(
    x: Tensor, weight: Tensor, bias: Optional[Tensor], num_heads: int
) -> tuple[Tensor, ...]:
    """``q, k, v`` of self-attention as ``(N, heads, L, head_dim)``: slices of the packed
    projection of ``x`` ``(L, N, E)``'s array (no view of a tensor a caller sees: nothing
    writes through them), the values the general path's chunk, per-tensor reshapes and
    transposes give, recorded as one node (:class:`_PackedHeads`)."""
    length, batch, embed = x.shape
    proj = linear(x, weight, bias)
    backend, native = proj.backend, proj.native
    split = (length, batch, 3, num_heads, embed // num_heads)
    heads = backend.permute(backend.reshape(native, split), (2, 1, 3, 0, 4))
    cuts, steps, kept = mv.unbind_cuts(tuple(heads.shape), 0)
    cut, reshape, dtype = backend.slice, backend.reshape, proj.dtype
    pieces = [Tensor(reshape(cut(heads, *c, steps), kept), backend, dtype) for c in cuts]
    if proj.requires_grad and tw.is_grad_enabled():
        if not proj._inference or not all_inference((proj,)):
            _record_heads(proj, pieces)
    return tuple(pieces)


class _PackedHeads(Function):
    """The gradient of the packed projection ``(L, N, 3E)`` from those of ``q, k, v``
    ``(N, heads, L, head_dim)`` (None: zeros): each viewed as ``(L, N, heads, head_dim)``,
    joined by one ``cat`` into the packed layout. One node for the three, where an unbind of
    the permuted projection cost a stack, the permute's and the reshape's steps and a copy
    more (the word-LM Transformer's backward: 4 x 40 us a layer)."""

    _well_formed = True  # (its backward returns one gradient a tensor input, unchecked)

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Optional[Tensor]) -> tuple:
        like = next(g for g in grads if g is not None)
        grads = [zeros_like_shape(like, like.shape) if g is None else g for g in grads]
        if tw.is_grad_enabled():  # create_graph: a graph of core ops
            parts = [mv.permuted(g, (2, 0, 1, 3)) for g in grads]
            return (mv._reshape(mv.cat(parts, 2), ctx.packed, "reshape"),)
        backend = like.backend  # (else on the arrays: 3 permutes, a cat, 20 us less)
        permute = backend.permute
        parts = [permute(g.native, (2, 0, 1, 3)) for g in grads]
        return (Tensor(backend.reshape(backend.cat(parts, 2), ctx.packed), backend, like.dtype),)


def _record_heads(proj: Tensor, pieces: list) -> None:
    """Attach ``q, k, v`` (``pieces``, cut from ``proj``) to one node, as PyTorch's node of
    several outputs (named as the unbind it stands for: ops/several_outputs.py)."""
    ctx = FunctionCtx((True,))
    ctx.packed = proj._shape
    shapes = tuple([InputShape(p) for p in pieces])
    group = Node("function", (proj,), (_PackedHeads, ctx, (proj,), None, shapes))
    group.inputs = (InputShape(proj),)  # (its rule reads no value)
    group.label = "UnbindBackward0"
    for i, piece in enumerate(pieces):
        node = output_node("function", group, shapes[i], (_PackedHeads, ctx, None, i, 3))
        node.label = "UnbindBackward0"
        piece._node = node
        piece._requires_grad = True


def _separate_projection(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    weights: tuple[Optional[Tensor], ...],
    bias: Optional[Tensor],
) -> tuple[Tensor, ...]:
    """``q, k, v`` from ``q/k/v_proj_weight`` and the packed bias; AssertionError, as
    PyTorch, for a missing weight or shapes that do not fit the inputs."""
    for which, weight in zip(("q", "k", "v"), weights):
        if weight is None:
            raise AssertionError(
                f"use_separate_proj_weight is True but {which}_proj_weight is None"
            )
    biases = (None, None, None) if bias is None else bias.chunk(3)
    embed = query.shape[-1]
    names = ("query", "key", "value")
    for name, x, weight, b in zip(names, (query, key, value), weights, biases):
        expected = (embed, x.shape[-1])
        if tuple(weight.shape) != expected:
            raise AssertionError(
                f"expecting {name} weights shape of {expected}, but got {tuple(weight.shape)}"
            )
        if b is not None and tuple(b.shape) != (embed,):
            raise AssertionError(
                f"expecting {name} bias shape of {(embed,)}, but got {tuple(b.shape)}"
            )
    return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def _checked_attn_mask(attn_mask: Tensor, batch_heads: int, length: int, source: int) -> Tensor:
    """The additive ``attn_mask``, ``(L, S)`` (shared by every head, which it broadcasts to:
    no view op on each call) or ``(N * heads, L, S)``; RuntimeError for a wrong shape, as
    PyTorch."""
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (length, source):
            raise RuntimeError(
                f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                f"{(length, source)}."
            )
        return attn_mask
    if attn_mask.dim() == 3:
        if tuple(attn_mask.shape) != (batch_heads, length, source):
            raise RuntimeError(
                f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                f"{(batch_heads, length, source)}."
            )
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def _static(tensor: Tensor, name: str, batch_heads: int, head_dim: int) -> Tensor:
    """A precomputed ``static_k``/``static_v`` of shape ``(N * heads, S, head_dim)``."""
    if tensor.shape[0] != batch_heads:
        raise AssertionError(
            f"expecting {name}.size(0) of {batch_heads}, but got {tensor.shape[0]}"
        )
    if tensor.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {tensor.shape[2]}")
    return tensor


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Optional[Tensor],
    in_proj_bias: Optional[Tensor],
    bias_k: Optional[Tensor],
    bias_v: Optional[Tensor],
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Optional[Tensor],
    training: bool = True,
    key_padding_mask: Optional[Tensor] = None,
    need_weights: bool = True,
    attn_mask: Optional[Tensor] = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Optional[Tensor] = None,
    k_proj_weight: Optional[Tensor] = None,
    v_proj_weight: Optional[Tensor] = None,
    static_k: Optional[Tensor] = None,
    static_v: Optional[Tensor] = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Optional[Tensor]]:
    """Multi-head attention of ``(L, N, E)`` queries over ``(S, N, kdim)`` keys and
    ``(S, N, vdim)`` values (or unbatched ``(L, E)``, ``(S, kdim)``, ``(S, vdim)``).

    Returns ``(output, weights)``: the output ``(L, N, E)`` after ``out_proj``, and the
    attention probabilities (after dropout) averaged over heads ``(N, L, S)``, per head
    ``(N, num_heads, L, S)`` without ``average_attn_weights``, or None without
    ``need_weights``. Masks are bool (True = may not attend) or float (added to the scores);
    ``attn_mask`` is ``(L, S)`` or ``(N * num_heads, L, S)``, ``key_padding_mask`` ``(N, S)``.
    ``is_causal`` is a hint that ``attn_mask`` is the causal mask (it needs the mask too).
    ``static_k``/``static_v`` ``(N * num_heads, S, head_dim)`` replace the projected keys and
    values. A query row whose every key is masked gives NaN weights, as PyTorch.
    """
    batched = _is_batched(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    length, batch, embed_dim = query.shape
    key_padding_mask = canonical_mask(
        key_padding_mask, "key_padding_mask", query.dtype, attn_mask, "attn_mask"
    )
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint alone makes the attention causal
    else:
        attn_mask = canonical_mask(attn_mask, "attn_mask", query.dtype)
        if key_padding_mask is not None:
            is_causal = False  # merged with the padding, the mask is no longer causal
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    in_heads = False  # q, k, v made (N, heads, L, head_dim) already, by the common path
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                f"{tuple(value.shape[:2])}"
            )
        weights = (q_proj_weight, k_proj_weight, v_proj_weight)
        q, k, v = _separate_projection(query, key, value, weights, in_proj_bias)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(
                f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}"
            )
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        if (
            query is key is value
            and not need_weights
            and bias_k is None
            and bias_v is None
            and static_k is None
            and static_v is None
            and not add_zero_attn
            and tuple(in_proj_weight.shape) == (3 * embed_dim, embed_dim)
            and (in_proj_bias is None or tuple(in_proj_bias.shape) == (3 * embed_dim,))
        ):
            # The common call (nn.TransformerEncoderLayer's): q, k, v straight in heads.
            q, k, v = _self_attention_heads(query, in_proj_weight, in_proj_bias, num_heads)
            in_heads = True
        else:
            q, k, v = _packed_projection(query, key, value, in_proj_weight, in_proj_bias)
    batch_heads = batch * num_heads
    if attn_mask is not None:
        attn_mask = _checked_attn_mask(attn_mask, batch_heads, length, key.shape[0])
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            which = "key" if static_k is not None else "value"
            raise AssertionError(f"bias cannot be added to static {which}.")
        k = tw.cat([k, bias_k.repeat(1, batch, 1)])
        v = tw.cat([v, bias_v.repeat(1, batch, 1)])
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    elif bias_k is not None or bias_v is not None:
        given, missing = ("bias_k", "bias_v") if bias_k is not None else ("bias_v", "bias_k")
        raise AssertionError(f"{given} is set but {missing} is None")

    def heads_first(x: Tensor) -> Tensor:  # (S, N, E) -> (N * heads, S, head_dim)
        return x.reshape(x.shape[0], batch_heads, head_dim).transpose(0, 1)

    if not in_heads:
        q = heads_first(q)
        k = (
            heads_first(k)
            if static_k is None
            else _static(static_k, "static_k", batch_heads, head_dim)
        )
        v = (
            heads_first(v)
            if static_v is None
            else _static(static_v, "static_v", batch_heads, head_dim)
        )
    if add_zero_attn:
        k = tw.cat([k, tw.zeros(batch_heads, 1, head_dim, dtype=k.dtype, device=k.device)], 1)
        v = tw.cat([v, tw.zeros(batch_heads, 1, head_dim, dtype=v.dtype, device=v.device)], 1)
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    source = length if in_heads else k.shape[1]
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != batch:
            raise AssertionError(
                f"Expected key_padded_mask.shape[0] to be {batch}, but got "
                f"{key_padding_mask.shape[0]}"
            )
        if key_padding_mask.shape[1] != source:
            raise AssertionError(
                f"Expected key_padded_mask.shape[1] to be {source}, but got "
                f"{key_padding_mask.shape[1]}"
            )
        padding = key_padding_mask.reshape(batch, 1, 1, source).expand(batch, num_heads, 1, source)
        padding = padding.reshape(batch_heads, 1, source)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = (q * math.sqrt(1.0 / head_dim)) @ k.transpose(-2, -1)
        weights = softmax(scores if attn_mask is None else attn_mask + scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = (weights @ v).transpose(0, 1).reshape(length, batch, embed_dim)
        weights = weights.reshape(batch, num_heads, length, source)
        if average_attn_weights:
            weights = weights.mean(1)
    else:
        if attn_mask is not None and attn_mask.dim() == 3:  # (an (L, S) one broadcasts)
            attn_mask = attn_mask.reshape(batch, num_heads, *attn_mask.shape[1:])
        if not in_heads:
            q = q.reshape(batch, num_heads, length, head_dim)
            k = k.reshape(batch, num_heads, source, head_dim)
            v = v.reshape(batch, num_heads, source, head_dim)
        out = scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask,
            dropout_p,
            is_causal,
        )
        out = out.permute(2, 0, 1, 3).reshape(length, batch, embed_dim)
        weights = None
    out = linear(out, out_proj_weight, out_proj_bias)
    if not batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights
