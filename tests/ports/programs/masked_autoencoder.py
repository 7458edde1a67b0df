"""A tiny masked autoencoder (MAE, after facebookresearch/mae's ``models_mae.py``) with a
classification head, on small synthetic images, in float64.

The MAE's parts: patches by ``F.unfold`` and images back by ``F.fold``, per-sample random
masking with ``torch.rand`` noise, ``argsort`` twice (``ids_restore``), ``torch.gather`` with
``index.unsqueeze(-1).repeat(...)``, a mask token ``expand``-ed and ``cat``-ed, the loss
on normalised patch targets (``mean``/``var`` over the last dim, ``(var + 1e-6) ** 0.5``)
averaged over masked patches only. Attention is ``nn.MultiheadAttention`` with
``batch_first=False`` inputs from ``transpose(0, 1)``, a boolean ``key_padding_mask`` (the
last token of some samples padded) and averaged ``need_weights``; pre-norm blocks with
``nn.GELU(approximate="tanh")``, ``LayerNorm(elementwise_affine=False)`` on the encoder's
output; AdamW with weight decay on matrices only, ``PolynomialLR``, gradient accumulation over
two micro-batches with ``loss / accum`` and ``clip_grad_norm_(foreach=True)``. Returns every
loss, attention weights and every parameter's and gradient's values.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=0.0)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(approximate="tanh"),
                                 nn.Linear(2 * dim, dim))  # fmt: skip

    def forward(self, x, pad):
        h = self.norm1(x).transpose(0, 1)
        a, weights = self.attn(h, h, h, key_padding_mask=pad, need_weights=True)
        x = x + a.transpose(0, 1)
        return x + self.mlp(self.norm2(x)), weights


class MAE(nn.Module):
    def __init__(self, size=8, patch=2, chans=2, dim=8, heads=2, classes=3):
        super().__init__()
        self.size, self.patch = size, patch
        n = (size // patch) ** 2
        self.embed = nn.Linear(chans * patch * patch, dim)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.register_buffer("pos", torch.randn(1, n + 1, dim) * 0.02)
        self.enc = nn.ModuleList([Block(dim, heads), Block(dim, heads)])
        self.enc_norm = nn.LayerNorm(dim, elementwise_affine=False)
        self.dec_embed = nn.Linear(dim, dim)
        self.mask_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.dec = Block(dim, heads)
        self.dec_pred = nn.Linear(dim, chans * patch * patch)
        self.head = nn.Linear(dim, classes)

    def patchify(self, imgs):
        return F.unfold(imgs, self.patch, stride=self.patch).transpose(1, 2)

    def unpatchify(self, x):
        return F.fold(x.transpose(1, 2), (self.size, self.size), self.patch, stride=self.patch)

    def random_masking(self, x, ratio):
        N, L, D = x.shape
        keep = int(L * (1 - ratio))
        noise = torch.rand(N, L, device=x.device)
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)
        ids_keep = ids_shuffle[:, :keep]
        x_masked = torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, D))
        mask = torch.ones([N, L], device=x.device)
        mask[:, :keep] = 0
        mask = torch.gather(mask, dim=1, index=ids_restore)
        return x_masked, mask, ids_restore

    def forward(self, imgs, ratio=0.5):
        x = self.embed(self.patchify(imgs)) + self.pos[:, 1:, :]
        x, mask, ids_restore = self.random_masking(x, ratio)
        cls = (self.cls + self.pos[:, :1, :]).expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1)
        pad = torch.zeros(x.shape[:2], dtype=torch.bool)
        pad[1::2, -1] = True  # odd samples: their last kept token is padding
        attn = []
        for blk in self.enc:
            x, w = blk(x, pad)
            attn.append(w)
        latent = self.enc_norm(x)
        x = self.dec_embed(latent)
        tokens = self.mask_token.repeat(x.shape[0], ids_restore.shape[1] + 1 - x.shape[1], 1)
        x_ = torch.cat([x[:, 1:, :], tokens], dim=1)
        x_ = torch.gather(x_, dim=1, index=ids_restore.unsqueeze(-1).repeat(1, 1, x.shape[2]))
        x = torch.cat([x[:, :1, :], x_], dim=1)
        x, _ = self.dec(x, torch.zeros(x.shape[:2], dtype=torch.bool))
        pred = self.dec_pred(x)[:, 1:, :]
        return pred, mask, self.head(latent[:, 0]), attn

    def loss(self, imgs, pred, mask):
        target = self.patchify(imgs)
        mean = target.mean(dim=-1, keepdim=True)
        var = target.var(dim=-1, keepdim=True)
        target = (target - mean) / (var + 1.0e-6) ** 0.5
        loss = ((pred - target) ** 2).mean(dim=-1)
        return (loss * mask).sum() / mask.sum()


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:8].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:8].tolist() + [p.grad.abs().sum().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--accum", type=int, default=2)
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
    model = MAE()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "token" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2 or "token" in n]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=1e-2, betas=(0.9, 0.95))  # fmt: skip
    scheduler = torch.optim.lr_scheduler.PolynomialLR(optimizer, total_iters=4, power=2.0)
    out = []
    for _step in range(args.steps):
        optimizer.zero_grad(set_to_none=True)
        for _ in range(args.accum):
            imgs = torch.randn(3, 2, 8, 8)
            labels = (imgs.mean((1, 2, 3)) > 0).long() + (imgs[:, 0, 0, 0] > 1).long()
            pred, mask, logits, attn = model(imgs)
            loss = model.loss(imgs, pred, mask) + F.cross_entropy(logits, labels)
            (loss / args.accum).backward()
            out += [loss.item()] + attn[-1][1].flatten().tolist()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        out += [norm.item()] + values(model)
        optimizer.step()
        scheduler.step()
        out.append(scheduler.get_last_lr()[0])
    model.eval()
    with torch.no_grad():
        imgs = torch.randn(2, 2, 8, 8)
        pred, mask, logits, _ = model(imgs, ratio=0.75)
        out += model.unpatchify(pred * mask.unsqueeze(-1)).flatten().tolist()
        out += logits.flatten().tolist()
    return out


if __name__ == "__main__":
    main()
