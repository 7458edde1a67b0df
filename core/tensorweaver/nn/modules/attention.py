"""``MultiheadAttention`` with PyTorch's parameters (``in_proj_weight``/``in_proj_bias`` or
``q/k/v_proj_weight``, ``out_proj``, ``bias_k``/``bias_v``), masks and return values."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.nn import functional as F
from tensorweaver.nn import init
from tensorweaver.nn.modules.linear import NonDynamicallyQuantizableLinear
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.parameter import Parameter
from tensorweaver.tensor import Tensor

_FN = "MultiheadAttention"


def _additive(mask: Tensor, name: str, dtype: Any) -> Tensor:
    """``mask`` as a float mask to add to the scores: a bool mask's True becomes -inf."""
    if mask.dtype is tw.bool:
        return tw.zeros(*mask.shape, dtype=dtype, device=mask.device).masked_fill(
            mask, float("-inf")
        )
    if not mask.dtype.is_floating_point:
        raise TypeError(
            f"{_FN}: {name} must be bool (True = may not attend) or floating point (added to "
            f"the scores), got {mask.dtype}"
        )
    return mask


class MultiheadAttention(Module):
    """Attention of ``num_heads`` heads of size ``embed_dim // num_heads``:
    ``out_proj(concat_h(softmax(q_h k_h^T / sqrt(head_dim) + mask) v_h))`` with
    ``q, k, v`` the input projections of ``query``, ``key``, ``value``.

    Inputs are ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``) or unbatched ``(L, E)``;
    keys and values have ``kdim``/``vdim`` features. ``attn_mask`` is ``(L, S)`` or
    ``(N * num_heads, L, S)``, ``key_padding_mask`` is ``(N, S)``; a bool mask marks with
    True the positions that may NOT be attended, a float mask is added to the scores.
    ``forward`` returns ``(output, weights)``, ``weights`` being the attention
    probabilities (after dropout) averaged over heads ``(N, L, S)``, or per head
    ``(N, num_heads, L, S)`` without ``average_attn_weights``, or None without
    ``need_weights``. As in PyTorch, a query row whose every key is masked gives NaN when the
    weights are returned. ``is_causal`` is a hint that ``attn_mask`` is the causal mask: it
    still needs ``attn_mask``, and lets the masked product run as causal attention when
    neither weights nor a key padding mask are asked for.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: Optional[int] = None,
        vdim: Optional[int] = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"{_FN}: embed_dim and num_heads must be greater than 0, got "
                f"embed_dim={embed_dim} and num_heads={num_heads}"
            )
        if embed_dim % num_heads:
            raise ValueError(
                f"{_FN}: embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})"
            )
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(tw.empty(3 * embed_dim, embed_dim, **factory))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = Parameter(tw.empty(embed_dim, embed_dim, **factory))
            self.k_proj_weight = Parameter(tw.empty(embed_dim, self.kdim, **factory))
            self.v_proj_weight = Parameter(tw.empty(embed_dim, self.vdim, **factory))
        if bias:
            self.in_proj_bias = Parameter(tw.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(tw.empty(1, 1, embed_dim, **factory))
            self.bias_v = Parameter(tw.empty(1, 1, embed_dim, **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's initialisation: Xavier-uniform projections, zero biases, Xavier-normal
        ``bias_k``/``bias_v``; ``out_proj.weight`` keeps Linear's default."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for weight in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _check_shapes(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Optional[Tensor],
        attn_mask: Optional[Tensor],
    ) -> bool:
        """Whether the inputs are batched; raises if any shape does not fit."""
        shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
        if query.dim() not in (2, 3) or key.dim() != query.dim() or value.dim() != query.dim():
            raise ValueError(
                f"{_FN}: query, key and value must all be 3-D (batched) or all 2-D (unbatched), "
                f"got {shapes}"
            )
        dims = (query.shape[-1], key.shape[-1], value.shape[-1])
        if dims != (self.embed_dim, self.kdim, self.vdim):
            raise ValueError(
                f"{_FN}: expected {self.embed_dim}, {self.kdim} and {self.vdim} features in "
                f"query, key and value (embed_dim, kdim, vdim), got {shapes}"
            )
        batched = query.dim() == 3
        batch_axis = 0 if self.batch_first else 1
        if tuple(key.shape[:-1]) != tuple(value.shape[:-1]) or (
            batched and key.shape[batch_axis] != query.shape[batch_axis]
        ):
            raise ValueError(
                f"{_FN}: key and value must share their sequence and batch sizes, and the "
                f"batch size of query, got {shapes}"
            )
        seq_axis = (1 if self.batch_first else 0) if batched else 0
        length, source = query.shape[seq_axis], key.shape[seq_axis]
        if key_padding_mask is not None:
            expected = (query.shape[batch_axis], source) if batched else (source,)
            if tuple(key_padding_mask.shape) != expected:
                raise ValueError(
                    f"{_FN}: expected key_padding_mask of shape {expected} for {shapes}, got "
                    f"{tuple(key_padding_mask.shape)}"
                )
        if attn_mask is not None:
            batch = query.shape[batch_axis] if batched else 1
            allowed = [(length, source), (batch * self.num_heads, length, source)]
            if tuple(attn_mask.shape) not in allowed:
                raise ValueError(
                    f"{_FN}: expected attn_mask of shape {allowed[0]} or {allowed[1]} "
                    f"(N * num_heads, L, S) for {shapes}, got {tuple(attn_mask.shape)}"
                )
        return batched

    def _in_projection(
        self, query: Tensor, key: Tensor, value: Tensor, shared: bool
    ) -> tuple[Tensor, ...]:
        """``q, k, v``; ``shared`` (query is key is value) takes one matmul for all three."""
        bias = self.in_proj_bias
        if self._qkv_same_embed_dim and shared:
            return F.linear(query, self.in_proj_weight, bias).chunk(3, -1)
        b_q, b_k, b_v = (None, None, None) if bias is None else bias.chunk(3)
        if self._qkv_same_embed_dim:
            w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    def _merged_mask(
        self,
        attn_mask: Optional[Tensor],
        key_padding_mask: Optional[Tensor],
        batch: int,
        extra_keys: int,
        dtype: Any,
    ) -> Optional[Tensor]:
        """One additive mask broadcastable to ``(N, heads, L, S + extra_keys)``; the extra
        keys (``bias_k``, the zero key) are never masked."""
        masks = []
        if attn_mask is not None:
            mask = _additive(attn_mask, "attn_mask", dtype)
            if mask.dim() == 3:
                mask = mask.reshape(batch, self.num_heads, *mask.shape[1:])
            masks.append(mask)
        if key_padding_mask is not None:
            mask = _additive(key_padding_mask, "key_padding_mask", dtype)
            masks.append(mask.reshape(batch, 1, 1, mask.shape[-1]))
        if not masks:
            return None
        merged = masks[0] if len(masks) == 1 else masks[0] + masks[1]
        return F.pad(merged, (0, extra_keys)) if extra_keys else merged

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Optional[Tensor] = None,
        need_weights: bool = True,
        attn_mask: Optional[Tensor] = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Optional[Tensor]]:
        batched = self._check_shapes(query, key, value, key_padding_mask, attn_mask)
        if is_causal and attn_mask is None:
            raise ValueError(
                f"{_FN}: is_causal is a hint that needs attn_mask as well; build one with "
                "nn.Transformer.generate_square_subsequent_mask(L)"
            )
        shared = query is key and key is value
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        length, batch, embed = query.shape
        heads, head_dim = self.num_heads, self.head_dim
        q, k, v = self._in_projection(query, key, value, shared)
        extra_keys = 0
        if self.bias_k is not None:
            k = tw.cat([k, self.bias_k.expand(1, batch, embed)])
            v = tw.cat([v, self.bias_v.expand(1, batch, embed)])
            extra_keys += 1

        def split_heads(x: Tensor) -> Tensor:  # (S, N, E) -> (N, heads, S, head_dim)
            return x.reshape(x.shape[0], batch, heads, head_dim).permute(1, 2, 0, 3)

        q, k, v = split_heads(q), split_heads(k), split_heads(v)
        if self.add_zero_attn:
            zero = tw.zeros(batch, heads, 1, head_dim, dtype=k.dtype, device=k.device)
            k, v = tw.cat([k, zero], 2), tw.cat([v, zero], 2)
            extra_keys += 1
        # The causal hint runs as is_causal attention only where PyTorch's does.
        causal = is_causal and key_padding_mask is None and not need_weights
        mask = None
        if not causal:
            mask = self._merged_mask(attn_mask, key_padding_mask, batch, extra_keys, q.dtype)
        dropout_p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = (q * head_dim**-0.5) @ k.transpose(-2, -1)
            weights = F.softmax(scores if mask is None else scores + mask, -1)
            if dropout_p:
                weights = F.dropout(weights, dropout_p)
            out = weights @ v
            if average_attn_weights:
                weights = weights.mean(1)
            if not batched:
                weights = weights.squeeze(0)
        else:
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=causal
            )
        out = self.out_proj(out.permute(2, 0, 1, 3).reshape(length, batch, embed))
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights
