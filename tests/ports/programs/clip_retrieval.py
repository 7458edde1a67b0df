"""A CLIP-style dual encoder with retrieval losses (after open_clip's ``ClipLoss`` and common
metric-learning recipes), on synthetic paired "images" and "captions", in float64.

The image tower: ``nn.Conv1d`` over rows with ``nn.ReplicationPad1d``, ``nn.SELU``,
``nn.AdaptiveMaxPool1d`` and ``nn.LPPool1d``; the text tower: ``nn.EmbeddingBag(mode="max")``
with per-sample offsets and ``nn.Softplus(beta=2)``; both ``F.normalize``-d. The losses:
the symmetric InfoNCE with a learnable ``logit_scale`` (``exp()`` then ``clamp(max=100)``,
clamped in place through ``.data`` after each step), ``F.cross_entropy`` with
``label_smoothing`` and with soft (probability) targets, hard negatives chosen by ``topk`` over
the similarity matrix with the diagonal filled through ``fill_diagonal_``, a ``logsumexp``
multi-similarity term, ``nn.CosineEmbeddingLoss``, ``nn.MultiMarginLoss(p=2, margin=0.5)``,
``nn.MultiLabelSoftMarginLoss`` over attribute labels, ``nn.GaussianNLLLoss`` and
``nn.PoissonNLLLoss`` heads. Adagrad for the towers and Rprop for the scale, ``LambdaLR``.
Returns every loss, the similarity matrix and every parameter's and gradient's values.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class ImageTower(nn.Module):
    def __init__(self, rows, dim):
        super().__init__()
        self.conv = nn.Sequential(nn.ReplicationPad1d(1), nn.Conv1d(rows, 6, 3), nn.SELU())
        self.maxpool = nn.AdaptiveMaxPool1d(2)
        self.lppool = nn.LPPool1d(2, 2)
        self.proj = nn.Linear(6 * 2 + 6 * 3, dim)

    def forward(self, x):
        h = self.conv(x)
        pooled = torch.cat([self.maxpool(h).flatten(1), self.lppool(h.abs() + 0.1).flatten(1)], 1)
        return self.proj(pooled)


class TextTower(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, 7, mode="max")
        self.mlp = nn.Sequential(nn.Linear(7, 7), nn.Softplus(beta=2.0), nn.Linear(7, dim))

    def forward(self, tokens, offsets):
        return self.mlp(self.bag(tokens, offsets))


class CLIP(nn.Module):
    def __init__(self, rows=4, vocab=15, dim=5, attrs=3):
        super().__init__()
        self.image = ImageTower(rows, dim)
        self.text = TextTower(vocab, dim)
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))
        self.attr = nn.Linear(dim, attrs)
        self.gauss = nn.Linear(dim, 2)
        self.rate = nn.Linear(dim, 1)

    def forward(self, images, tokens, offsets):
        img = F.normalize(self.image(images), dim=-1)
        txt = F.normalize(self.text(tokens, offsets), dim=1, eps=1e-8)
        return img, txt, self.logit_scale.exp().clamp(max=100)


def losses(model, img, txt, scale, attrs, counts, target):
    n = img.shape[0]
    labels = torch.arange(n)
    logits = scale * img @ txt.t()
    clip = (F.cross_entropy(logits, labels, label_smoothing=0.1)
            + F.cross_entropy(logits.t(), labels, label_smoothing=0.1)) / 2  # fmt: skip
    soft = F.softmax(txt @ txt.t() * 5, dim=1).detach()
    distill = F.cross_entropy(logits, soft)
    sim = img @ txt.t()
    neg = sim.detach().clone()
    neg.fill_diagonal_(-2.0)
    hard = neg.topk(2, dim=1).indices
    hard_sim = sim.gather(1, hard)
    ms = torch.log1p(torch.exp(2 * (hard_sim - 0.5)).sum(1)).mean() / 2
    ms = ms + torch.logsumexp(-2 * (sim.diagonal() - 0.5), dim=0) / 2
    cos = nn.CosineEmbeddingLoss(margin=0.2)(img, txt[hard[:, 0]], -torch.ones(n))
    cos = cos + nn.CosineEmbeddingLoss()(img, txt, torch.ones(n))
    margin = nn.MultiMarginLoss(p=2, margin=0.5)(logits / 10, target)
    attr = nn.MultiLabelSoftMarginLoss()(model.attr(img), attrs)
    mu, log_var = model.gauss(txt).unbind(1)
    gauss = nn.GaussianNLLLoss(full=True)(mu, counts.double(), log_var.exp())
    poisson = nn.PoissonNLLLoss(log_input=True, full=True)(model.rate(img).squeeze(1), counts)
    parts = [clip, distill, ms, cos, margin, attr, gauss, poisson]
    return sum(parts), parts, sim


def make_batch(rng, n, rows, vocab):
    images = torch.from_numpy(rng.standard_normal((n, rows, 6)))
    lengths = rng.integers(2, 5, n)
    tokens = torch.from_numpy(rng.integers(0, vocab, lengths.sum()))
    offsets = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    attrs = torch.from_numpy((rng.random((n, 3)) > 0.5).astype(np.float64))
    counts = torch.from_numpy(rng.poisson(2.0, n).astype(np.float64))
    target = torch.from_numpy(rng.integers(0, n, n))
    return images, tokens, offsets, attrs, counts, target


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
    rng = np.random.default_rng(0)
    model = CLIP()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    towers = [p for n, p in model.named_parameters() if n != "logit_scale"]
    opt = torch.optim.Adagrad(towers, lr=0.05, lr_decay=0.01, initial_accumulator_value=0.1)
    opt_scale = torch.optim.Rprop([model.logit_scale], lr=0.01, etas=(0.5, 1.2))
    scheduler = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (1 + e))
    out = []
    for _ in range(args.steps):
        batch = make_batch(rng, 5, 4, 15)
        img, txt, scale = model(*batch[:3])
        loss, parts, sim = losses(model, img, txt, scale, *batch[3:])
        opt.zero_grad()
        opt_scale.zero_grad()
        loss.backward()
        out += [p.item() for p in parts] + sim.flatten().tolist() + values(model)
        opt.step()
        opt_scale.step()
        scheduler.step()
        model.logit_scale.data.clamp_(0, np.log(100))
    return out


if __name__ == "__main__":
    main()
