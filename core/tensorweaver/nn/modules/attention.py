"""``MultiheadAttention`` with PyTorch's parameters (``in_proj_weight``/``in_proj_bias`` or
``q/k/v_proj_weight``, ``out_proj``, ``bias_k``/``bias_v``), masks and return values."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.nn import functional as F
from tensorweaver.nn import init
from tensorweaver.nn.functional.multi_head_attention import canonical_mask
from tensorweaver.nn.modules.linear import NonDynamicallyQuantizableLinear
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.parameter import Parameter
from tensorweaver.tensor import Tensor


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
    weights are returned, and also without them where PyTorch's inference fast path would
    run (:meth:`_takes_fast_path`); elsewhere its output is the bias-only row. ``is_causal``
    is a hint that ``attn_mask`` is the causal mask: it still needs ``attn_mask``
    (RuntimeError without it), and lets the masked product run as causal attention when
    neither weights nor a key padding mask are asked for. The forward is
    ``F.multi_head_attention_forward``.
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
                "MultiheadAttention: embed_dim and num_heads must be greater than 0, got "
                f"embed_dim={embed_dim} and num_heads={num_heads}"
            )
        if embed_dim % num_heads:
            raise AssertionError(  # PyTorch's class
                f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads "
                f"({num_heads})"
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

    def merge_masks(
        self,
        attn_mask: Optional[Tensor],
        key_padding_mask: Optional[Tensor],
        query: Tensor,
    ) -> tuple[Optional[Tensor], Optional[int]]:
        """``(mask, mask_type)`` as PyTorch's: the key padding mask alone (type 1), or the
        ``(L, L)`` / ``(N * heads, L, L)`` attention mask expanded to ``(N, heads, L, L)``
        and added to the padding mask if any (type 2); ``(None, None)`` without masks."""
        if attn_mask is None:
            return (None, None) if key_padding_mask is None else (key_padding_mask, 1)
        batch, length, _ = query.shape
        if attn_mask.dim() == 3:
            merged = attn_mask.reshape(batch, -1, length, length)
        else:
            merged = attn_mask.reshape(1, 1, length, length).expand(
                batch, self.num_heads, length, length
            )
        if key_padding_mask is not None:
            padding = key_padding_mask.reshape(batch, 1, 1, length)
            merged = merged + padding.expand(batch, self.num_heads, 1, length)
        return merged, 2

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
        batched = query.dim() == 3
        # PyTorch's fused kernel differs from the general path only in the NaN of a fully
        # masked row, and returns the same weights (NaN there too).
        fused = (
            not need_weights
            and (attn_mask is not None or key_padding_mask is not None)
            and self._takes_fast_path(query, key, value, attn_mask, key_padding_mask)
        )
        key_padding_mask = canonical_mask(
            key_padding_mask, "key_padding_mask", query.dtype, attn_mask, "attn_mask"
        )
        attn_mask = canonical_mask(attn_mask, "attn_mask", query.dtype)
        if self.batch_first and batched:
            # Transposed together so that the functional form still sees which are the same.
            if key is value:
                same = query is key
                key = value = key.transpose(1, 0)
                query = key if same else query.transpose(1, 0)
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        out, weights = F.multi_head_attention_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            use_separate_proj_weight=separate,
            q_proj_weight=self.q_proj_weight if separate else None,
            k_proj_weight=self.k_proj_weight if separate else None,
            v_proj_weight=self.v_proj_weight if separate else None,
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
        )
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        if fused:
            out = with_nan_rows(out, fully_masked_rows(self, attn_mask, key_padding_mask, out))
        return out, weights

    def _takes_fast_path(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        attn_mask: Optional[Tensor],
        key_padding_mask: Optional[Tensor],
    ) -> bool:
        """Whether PyTorch would run its fused inference kernel: eval, bool (or no) masks,
        batched batch-first self-attention with even heads, packed projections with biases,
        no ``bias_k``/``add_zero_attn``, no autocast, grad off or nothing requiring it."""
        if self.training or not self.batch_first or self.num_heads % 2:
            return False
        if query.dim() != 3 or query is not key or key is not value:
            return False
        if any(m is not None and m.dtype.is_floating_point for m in (attn_mask, key_padding_mask)):
            return False
        if self.in_proj_bias is None or self.in_proj_weight is None:
            return False
        if self.bias_k is not None or self.add_zero_attn or tw.is_autocast_enabled():
            return False
        if any(query.dtype is not p.dtype for p in (self.in_proj_weight, self.in_proj_bias)):
            return False
        out_proj = self.out_proj
        tensors = (query, self.in_proj_weight, self.in_proj_bias, out_proj.weight, out_proj.bias)
        return fast_path_grad_free(tensors)


def fast_path_grad_free(tensors: Any) -> bool:
    """PyTorch's fast-path condition on its tensor arguments: grad is off or none of
    ``tensors`` requires it."""
    return not tw.is_grad_enabled() or not any(t.requires_grad for t in tensors)


def with_nan_rows(x: Tensor, rows: Tensor) -> Tensor:
    """``x`` with NaN in ``rows`` (a bool mask that broadcasts over it); ``x`` itself where
    no row is picked, the usual case, which spares the fill."""
    return x.masked_fill(rows, float("nan")) if bool(rows.any()) else x


def fully_masked_rows(
    attention: MultiheadAttention,
    attn_mask: Optional[Tensor],
    key_padding_mask: Optional[Tensor],
    query: Tensor,
) -> Optional[Tensor]:
    """The query rows of the batch-first ``query`` that PyTorch's fused inference kernels
    give NaN (a softmax over no key at all), as a bool mask broadcasting over ``(N, L, E)``;
    None without masks. Those kernels merge the masks as :meth:`MultiheadAttention.merge_masks`
    and take every nonzero entry as a blocked key; one head whose row is blocked whole makes
    the row NaN after the output projection."""
    merged, kind = attention.merge_masks(attn_mask, key_padding_mask, query)
    if merged is None:
        return None
    blocked = (merged != 0).all(-1)
    return blocked.reshape(-1, 1, 1) if kind == 1 else blocked.any(1).unsqueeze(-1)
