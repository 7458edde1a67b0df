"""Attention written with ``torch.einsum``, as lucidrains-style single-file models write it
(Perceiver's latent cross-attention, linear attention, a T5-style relative position bias),
in a small sequence classifier, in float64.

Heads split by ``view``/``permute``; scores by ``einsum("bhid,bhjd->bhij")`` scaled by
``d ** -0.5``, a key-padding mask applied by ``masked_fill(~mask[:, None, None, :],
-torch.finfo(dtype).max)``, values by ``einsum("bhij,bhjd->bhid")``; a learned relative
position bias (bucketed ``j - i`` distances clamped and shifted, an ``nn.Embedding``
looked up and ``permute``d to ``(h, i, j)``); latents ``repeat``ed over the batch attending
to the inputs; linear attention with the ``elu(x) + 1`` feature map
(``einsum("bhnd,bhne->bhde")`` and the normaliser ``einsum("bhnd,bhd->bhn")``, the
ellipsis form ``einsum("...nd,...de->...ne")``); a bilinear readout
``einsum("bi,oij,bj->bo")`` beside ``nn.Bilinear``; Adam with ``amsgrad``. Returns the
losses, gradients and parameters.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class RelativeBias(nn.Module):
    def __init__(self, heads, max_distance=4):
        super().__init__()
        self.max_distance = max_distance
        self.bias = nn.Embedding(2 * max_distance + 1, heads)

    def forward(self, i, j):
        q = torch.arange(i).unsqueeze(1)
        k = torch.arange(j).unsqueeze(0)
        buckets = (k - q).clamp(-self.max_distance, self.max_distance) + self.max_distance
        return self.bias(buckets).permute(2, 0, 1)  # (h, i, j)


class Attention(nn.Module):
    def __init__(self, dim, heads=2, dim_head=3, context_dim=None, rel_bias=False):
        super().__init__()
        inner = heads * dim_head
        self.heads, self.scale = heads, dim_head**-0.5
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_kv = nn.Linear(context_dim or dim, 2 * inner, bias=False)
        self.to_out = nn.Linear(inner, dim)
        self.rel = RelativeBias(heads) if rel_bias else None

    def split(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.heads, -1).permute(0, 2, 1, 3)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = self.split(self.to_q(x))
        k, v = map(self.split, self.to_kv(context).chunk(2, dim=-1))
        sim = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
        if self.rel is not None:
            sim = sim + self.rel(sim.shape[-2], sim.shape[-1])
        if mask is not None:
            sim = sim.masked_fill(~mask[:, None, None, :], -torch.finfo(sim.dtype).max)
        attn = sim.softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        b, h, n, d = out.shape
        return self.to_out(out.permute(0, 2, 1, 3).reshape(b, n, h * d))


class LinearAttention(nn.Module):
    def __init__(self, dim, heads=2, dim_head=3):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, 3 * heads * dim_head, bias=False)
        self.to_out = nn.Linear(heads * dim_head, dim)

    def forward(self, x, mask):
        b, n, _ = x.shape
        q, k, v = (
            t.view(b, n, self.heads, -1).transpose(1, 2) for t in self.to_qkv(x).chunk(3, dim=-1)
        )
        q, k = F.elu(q) + 1, F.elu(k) + 1
        k = k * mask[:, None, :, None]
        context = torch.einsum("bhnd,bhne->bhde", k, v)
        normaliser = torch.einsum("bhnd,bhd->bhn", q, k.sum(dim=2)).reciprocal()
        out = torch.einsum("...nd,...de->...ne", q, context) * normaliser.unsqueeze(-1)
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))


class PerceiverClassifier(nn.Module):
    def __init__(self, vocab=11, dim=6, latents=3, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.self_attn = Attention(dim, rel_bias=True)
        self.linear_attn = LinearAttention(dim)
        self.latents = nn.Parameter(torch.randn(latents, dim) * 0.5)
        self.cross = Attention(dim, context_dim=dim)
        self.norm = nn.LayerNorm(dim)
        self.readout = nn.Parameter(torch.randn(classes, dim, dim) * 0.1)
        self.bilinear = nn.Bilinear(dim, dim, classes)

    def forward(self, tokens, mask):
        x = self.embed(tokens)
        x = x + self.self_attn(x, mask=mask)
        x = x + self.linear_attn(x, mask.double())
        lat = self.latents.unsqueeze(0).repeat(tokens.size(0), 1, 1)
        lat = lat + self.cross(lat, context=x, mask=mask)
        pooled = self.norm(lat).mean(dim=1)
        first = self.norm(lat)[:, 0]
        return torch.einsum("bi,oij,bj->bo", pooled, self.readout, first) + self.bilinear(
            pooled, first
        )


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:3].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:3].tolist() + [p.grad.abs().sum().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return train(args)
    finally:
        torch.set_default_dtype(previous)


def train(args):
    torch.manual_seed(0)
    model = PerceiverClassifier()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3, amsgrad=True)
    out = []
    for _ in range(args.steps):
        tokens = torch.randint(1, 11, (4, 7))
        lengths = torch.randint(3, 8, (4,))
        mask = torch.arange(7).unsqueeze(0) < lengths.unsqueeze(1)
        tokens = tokens.masked_fill(~mask, 0)
        labels = (tokens * mask).sum(1) % 3
        optimizer.zero_grad()
        logits = model(tokens, mask)
        loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
        loss.backward()
        optimizer.step()
        out += [loss.item()] + values(model)
    with torch.no_grad():
        out += model(tokens, mask).flatten().tolist()
    return out


if __name__ == "__main__":
    main()
