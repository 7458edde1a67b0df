"""The Transformer of "Attention Is All You Need" with PyTorch's modules, submodule names and
arguments: ``TransformerEncoderLayer``, ``TransformerDecoderLayer``, ``TransformerEncoder``,
``TransformerDecoder`` and ``Transformer``.

A layer is post-norm by default (``x = norm(x + block(x))``) or pre-norm with
``norm_first`` (``x = x + block(norm(x))``). Masks follow ``MultiheadAttention``: bool True
or float -inf blocks a position. The ``is_causal`` arguments are hints that the given mask
is causal; the mask itself is what is applied.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any, Callable, Optional, Union

import tensorweaver as tw
from tensorweaver.nn import functional as F
from tensorweaver.nn import init
from tensorweaver.nn.functional.multi_head_attention import canonical_mask
from tensorweaver.nn.modules.activation import GELU, ReLU
from tensorweaver.nn.modules.attention import (
    MultiheadAttention,
    fast_path_grad_free,
    fully_masked_rows,
    with_nan_rows,
)
from tensorweaver.nn.modules.container import ModuleList
from tensorweaver.nn.modules.dropout import Dropout
from tensorweaver.nn.modules.linear import Linear
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.modules.normalization import LayerNorm
from tensorweaver.tensor import Tensor

Activation = Union[str, Callable[[Tensor], Tensor]]


def _activation(activation: Activation, fn: str) -> Callable[[Tensor], Tensor]:
    """The activation named ``"relu"`` or ``"gelu"``, or ``activation`` itself (any other
    object is kept as given, as PyTorch, and called in forward)."""
    if not isinstance(activation, str):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"{fn}: activation should be relu/gelu, not {activation}")


def _relu_or_gelu(activation: Any) -> int:
    """PyTorch's ``activation_relu_or_gelu`` flag: 1 for ReLU, 2 for GELU, else 0."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    return 2 if activation is F.gelu or isinstance(activation, GELU) else 0


def _clones(module: Module, n: int) -> ModuleList:
    """``n`` independent deep copies of ``module`` (each with its own parameters)."""
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class _TransformerLayer(Module):
    """What the encoder and decoder layers share: self-attention, the feed-forward block's
    linears, and one LayerNorm and one dropout per block, registered in PyTorch's order (the
    order of the state_dict and of repr); ``cross_attention`` adds the decoder's block over
    ``memory``."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int,
        dropout: float,
        layer_norm_eps: float,
        batch_first: bool,
        norm_first: bool,
        bias: bool,
        factory: dict[str, Any],
        cross_attention: bool,
    ) -> None:
        super().__init__()
        attention = {"dropout": dropout, "bias": bias, "batch_first": batch_first, **factory}
        self.self_attn = MultiheadAttention(d_model, nhead, **attention)
        if cross_attention:
            self.multihead_attn = MultiheadAttention(d_model, nhead, **attention)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        norm = {"eps": layer_norm_eps, "bias": bias, **factory}
        self.norm1 = LayerNorm(d_model, **norm)
        self.norm2 = LayerNorm(d_model, **norm)
        if cross_attention:
            self.norm3 = LayerNorm(d_model, **norm)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if cross_attention:
            self.dropout3 = Dropout(dropout)

    @staticmethod
    def _attention_block(
        attention: MultiheadAttention,
        dropout: Dropout,
        x: Tensor,
        source: Tensor,
        attn_mask: Optional[Tensor],
        padding: Optional[Tensor],
        is_causal: bool,
    ) -> Tensor:
        """``dropout`` of ``x`` attending over ``source``."""
        x = attention(
            x,
            source,
            source,
            attn_mask=attn_mask,
            key_padding_mask=padding,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return dropout(x)

    def _sa_block(
        self, x: Tensor, attn_mask: Optional[Tensor], padding: Optional[Tensor], is_causal: bool
    ) -> Tensor:
        return self._attention_block(
            self.self_attn, self.dropout1, x, x, attn_mask, padding, is_causal
        )


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention then a feed-forward block ``linear2(dropout(activation(linear1(x))))``,
    each with a residual connection, dropout and LayerNorm."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        blocks = (dim_feedforward, dropout, layer_norm_eps, batch_first, norm_first, bias)
        factory = {"device": device, "dtype": dtype}
        super().__init__(d_model, nhead, *blocks, factory, cross_attention=False)
        activation = _activation(activation, type(self).__name__)
        self.activation_relu_or_gelu = _relu_or_gelu(activation)
        self.activation = activation

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(
        self,
        src: Tensor,
        src_mask: Optional[Tensor] = None,
        src_key_padding_mask: Optional[Tensor] = None,
        is_causal: bool = False,
    ) -> Tensor:
        # Float masks from here on (PyTorch warns here, under these names, for mixed kinds).
        src_key_padding_mask = canonical_mask(
            src_key_padding_mask, "src_key_padding_mask", src.dtype, src_mask, "src_mask"
        )
        src_mask = canonical_mask(src_mask, "src_mask", src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        if (src_mask is not None or src_key_padding_mask is not None) and self._takes_fast_path(
            src
        ):
            # PyTorch's fused layer gives NaN where its attention does (masks are float here,
            # so the attention module itself does not take its own fast path).
            x = with_nan_rows(
                x, fully_masked_rows(self.self_attn, src_mask, src_key_padding_mask, src)
            )
        return x

    def _takes_fast_path(self, src: Tensor) -> bool:
        """Whether PyTorch would run its fused inference layer: eval, batched input, a
        batch-first attention with even heads and packed, biased projections, ReLU or GELU,
        equal norm eps, no forward hooks on any submodule, no autocast, grad off or nothing
        requiring it."""
        attention = self.self_attn
        if self.training or src.dim() != 3 or not attention.batch_first:
            return False
        if attention.in_proj_bias is None or not attention._qkv_same_embed_dim:
            return False
        if not self.activation_relu_or_gelu or self.norm1.eps != self.norm2.eps:
            return False
        if attention.num_heads % 2 or tw.is_autocast_enabled():
            return False
        if any(m._forward_hooks or m._forward_pre_hooks for m in self.modules()):
            return False
        blocks = (attention.out_proj, self.norm1, self.norm2, self.linear1, self.linear2)
        tensors = [src, attention.in_proj_weight, attention.in_proj_bias]
        return fast_path_grad_free(tensors + [t for m in blocks for t in (m.weight, m.bias)])


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention, attention over ``memory`` (the encoder's output), then the
    feed-forward block, each with a residual connection, dropout and LayerNorm."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        blocks = (dim_feedforward, dropout, layer_norm_eps, batch_first, norm_first, bias)
        factory = {"device": device, "dtype": dtype}
        super().__init__(d_model, nhead, *blocks, factory, cross_attention=True)
        self.activation = _activation(activation, type(self).__name__)

    def _mha_block(
        self,
        x: Tensor,
        memory: Tensor,
        attn_mask: Optional[Tensor],
        padding: Optional[Tensor],
        is_causal: bool,
    ) -> Tensor:
        return self._attention_block(
            self.multihead_attn, self.dropout2, x, memory, attn_mask, padding, is_causal
        )

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
        tgt_key_padding_mask: Optional[Tensor] = None,
        memory_key_padding_mask: Optional[Tensor] = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(
            x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal)
        )
        return self.norm3(x + self._ff_block(x))


def _why_no_fast_path(layer: Module) -> Optional[str]:
    """PyTorch's reason its encoder cannot take the nested-tensor path for ``layer``."""
    if type(layer) is not TransformerEncoderLayer:
        return "encoder_layer was not TransformerEncoderLayer"
    attention = layer.self_attn
    reasons = (
        (layer.norm_first, "encoder_layer.norm_first was True"),
        (
            not attention.batch_first,
            "encoder_layer.self_attn.batch_first was not True"
            "(use batch_first for better inference performance)",  # sic, as PyTorch
        ),
        (
            not attention._qkv_same_embed_dim,
            "encoder_layer.self_attn._qkv_same_embed_dim was not True",
        ),
        (attention.in_proj_bias is None, "encoder_layer.self_attn was passed bias=False"),
        (not layer.activation_relu_or_gelu, "encoder_layer.activation_relu_or_gelu was not True"),
        (
            layer.norm1.eps != layer.norm2.eps,
            "encoder_layer.norm1.eps was not equal to encoder_layer.norm2.eps",
        ),
        (attention.num_heads % 2 == 1, "encoder_layer.self_attn.num_heads is odd"),
    )
    return next((reason for failed, reason in reasons if failed), None)


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (each with its own parameters) applied in
    turn, then ``norm`` if given.

    Where PyTorch would take its nested-tensor ("sparsity") fast path — inference with a
    ``src_key_padding_mask`` on a plain batch-first post-norm layer, see :meth:`_zeroed_positions` —
    its output is exactly 0 at padded positions (before ``norm``); so is this one's, so that
    code pooling over every position sees the same numbers."""

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Optional[Module] = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.mask_check = mask_check
        why_not = _why_no_fast_path(encoder_layer)
        self.use_nested_tensor = enable_nested_tensor and why_not is None
        if enable_nested_tensor and why_not is not None:
            warnings.warn(  # PyTorch's words
                f"enable_nested_tensor is True, but self.use_nested_tensor is False because "
                f"{why_not}",
                stacklevel=2,
            )

    def _zeroed_positions(self, src: Tensor, mask: Any, padding: Any) -> Optional[Tensor]:
        """The padded positions (bool) where PyTorch's fast path would run and zero them, else
        None."""
        from tensorweaver.amp import autocast_dtype

        if not self.use_nested_tensor or padding is None or mask is not None:
            return None
        if src.dim() != 3 or self.layers[0].training or autocast_dtype() is not None:
            return None
        if tw.is_grad_enabled() and (
            src.requires_grad or any(p.requires_grad for p in self.parameters())
        ):
            return None
        padding = padding if padding.dtype is tw.bool else padding != 0
        # Left-aligned: no real position after a padded one in any sequence.
        if self.mask_check and bool((padding[:, :-1] & ~padding[:, 1:]).any()):
            return None
        return padding

    def forward(
        self,
        src: Tensor,
        mask: Optional[Tensor] = None,
        src_key_padding_mask: Optional[Tensor] = None,
        is_causal: Optional[bool] = None,
    ) -> Tensor:
        src_key_padding_mask = canonical_mask(
            src_key_padding_mask, "src_key_padding_mask", src.dtype, mask, "mask"
        )
        mask = canonical_mask(mask, "mask", src.dtype)
        x = src
        for layer in self.layers:
            x = layer(
                x,
                src_mask=mask,
                src_key_padding_mask=src_key_padding_mask,
                is_causal=bool(is_causal),
            )
        zeroed = self._zeroed_positions(src, mask, src_key_padding_mask)
        if zeroed is not None:
            x = x.masked_fill(zeroed.unsqueeze(-1), 0.0)
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` applied in turn to ``tgt``, each attending
    over ``memory``, then ``norm`` if given."""

    def __init__(
        self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Optional[Module] = None
    ) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
        tgt_key_padding_mask: Optional[Tensor] = None,
        memory_key_padding_mask: Optional[Tensor] = None,
        tgt_is_causal: Optional[bool] = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        for layer in self.layers:
            x = layer(
                x,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """An encoder-decoder Transformer: ``decoder(tgt, encoder(src))``, both stacks ending in a
    LayerNorm. Every parameter with more than one dimension starts Xavier-uniform.
    ``custom_encoder``/``custom_decoder`` replace the default stacks."""

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = F.relu,
        custom_encoder: Optional[Module] = None,
        custom_decoder: Optional[Module] = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps)
        layer_kwargs = {"batch_first": batch_first, "norm_first": norm_first, "bias": bias}

        def stack(custom: Optional[Module], layer_type: type, stack_type: type, n: int) -> Module:
            """``custom``, or ``n`` default layers ending in a LayerNorm."""
            if custom is not None:
                return custom
            layer = layer_type(*layer_args, **layer_kwargs, **factory)
            return stack_type(
                layer, n, LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            )

        self.encoder = stack(
            custom_encoder, TransformerEncoderLayer, TransformerEncoder, num_encoder_layers
        )
        self.decoder = stack(
            custom_decoder, TransformerDecoderLayer, TransformerDecoder, num_decoder_layers
        )
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """Xavier-uniform for every parameter with more than one dimension."""
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Optional[Tensor] = None,
        tgt_mask: Optional[Tensor] = None,
        memory_mask: Optional[Tensor] = None,
        src_key_padding_mask: Optional[Tensor] = None,
        tgt_key_padding_mask: Optional[Tensor] = None,
        memory_key_padding_mask: Optional[Tensor] = None,
        src_is_causal: Optional[bool] = None,
        tgt_is_causal: Optional[bool] = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """``src`` ``(S, N, E)`` and ``tgt`` ``(T, N, E)`` (``(N, S, E)``/``(N, T, E)`` with
        ``batch_first``; ``(S, E)``/``(T, E)`` unbatched) give ``(T, N, E)``."""
        batch_axis = 0 if self.batch_first else 1
        if src.dim() == 3 and tgt.dim() == 3 and src.shape[batch_axis] != tgt.shape[batch_axis]:
            raise RuntimeError(
                f"Transformer: the batch number of src and tgt must be equal: src "
                f"{tuple(src.shape)} and tgt {tuple(tgt.shape)} must have the same batch size "
                f"(dimension {batch_axis})"
            )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(
                f"Transformer: the feature number of src and tgt must be equal to d_model="
                f"{self.d_model}, got src {tuple(src.shape)} and tgt {tuple(tgt.shape)}"
            )
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        """The ``(sz, sz)`` causal float mask: -inf above the diagonal (future positions),
        0 elsewhere."""
        return tw.full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(1)
