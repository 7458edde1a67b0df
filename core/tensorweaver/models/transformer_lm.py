"""A GPT-style causal language model: token and position embeddings, pre-norm transformer
blocks with causal self-attention, a final LayerNorm and a (by default tied) output head."""

from __future__ import annotations

import math

import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.tensor import Tensor


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where each position sees itself and the positions before it.

    Runs through ``F.scaled_dot_product_attention(is_causal=True)``, which a backend may
    replace with a fused (flash) kernel.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(
                f"CausalSelfAttention: d_model={d_model} must be a multiple of n_heads={n_heads}"
            )
        self.n_heads = n_heads
        self.dropout = dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: Tensor) -> Tensor:
        batch, length, width = x.shape
        heads = self.qkv(x).reshape(batch, length, 3, self.n_heads, width // self.n_heads)
        q, k, v = heads.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, heads, length, dim)
        out = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True
        )
        return self.proj(out.transpose(1, 2).reshape(batch, length, width))


class Block(nn.Module):
    """``x + attention(LayerNorm(x))``, then ``x + MLP(LayerNorm(x))`` (pre-norm)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),
            nn.GELU(),
            nn.Linear(4 * d_model, d_model),
            nn.Dropout(dropout),
        )

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TransformerLM(nn.Module):
    """Maps token ids ``(N, T)`` (``T <= context_length``) to next-token logits
    ``(N, T, vocab_size)``. ``tie_weights`` shares the output head's weight with the token
    embedding. Weights start as in GPT-2: normal(0, 0.02), with the residual projections
    scaled down by ``sqrt(2 * n_layers)``.
    """

    def __init__(
        self,
        vocab_size: int,
        context_length: int,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        dropout: float = 0.0,
        tie_weights: bool = True,
    ) -> None:
        super().__init__()
        self.context_length = context_length
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(context_length, d_model)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList([Block(d_model, n_heads, dropout) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        for block in self.blocks:
            for proj in (block.attn.proj, block.mlp[2]):
                nn.init.normal_(proj.weight, std=0.02 / math.sqrt(2 * n_layers))
        if tie_weights:
            self.head.weight = self.tok_emb.weight

    def forward(self, idx: Tensor) -> Tensor:
        if idx.dim() != 2 or idx.dtype.is_floating_point:
            raise ValueError(
                f"TransformerLM: expected integer token ids of shape (N, T), got "
                f"{idx.dtype.name} of shape {tuple(idx.shape)}"
            )
        length = idx.shape[1]
        if length > self.context_length:
            raise ValueError(
                f"TransformerLM: sequence length {length} exceeds context_length "
                f"{self.context_length}; crop the input to its last {self.context_length} tokens"
            )
        positions = tw.arange(length, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(positions))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def generate(
        self,
        idx: Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
    ) -> Tensor:
        """``idx`` ``(N, T)`` followed by ``max_new_tokens`` tokens, each drawn from the model's
        next-token distribution (sharpened by ``temperature``, cut to the ``top_k`` likeliest
        tokens when given; ``temperature=0`` picks the likeliest token). Sampling uses
        TensorWeaver's generator, so ``tw.manual_seed`` makes it repeatable."""
        if temperature < 0 or (top_k is not None and top_k < 1):
            raise ValueError(
                f"generate: temperature must be >= 0 and top_k >= 1, got {temperature}, {top_k}"
            )
        was_training = self.training
        self.eval()
        try:
            with tw.no_grad():
                for _ in range(max_new_tokens):
                    logits = self(idx[:, -self.context_length :])[:, -1]
                    idx = tw.cat([idx, _next_token(logits, temperature, top_k)], 1)
        finally:
            self.train(was_training)
        return idx


def _next_token(logits: Tensor, temperature: float, top_k: int | None) -> Tensor:
    """One token id per row of ``logits`` ``(N, V)``, as an ``(N, 1)`` tensor."""
    if temperature == 0:
        return logits.argmax(-1, keepdim=True)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, -1).values[:, -1:]  # ties with the k-th largest stay in
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return tw.multinomial(F.softmax(logits, -1), 1, replacement=True)


def lm_loss(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean next-token cross-entropy of logits ``(N, T, V)`` against token ids ``(N, T)``;
    give it to ``tw.fit`` as ``loss=lm_loss``."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())
