"""A small Vision Transformer trained the way timm-style and pytorch/examples scripts do.

Patches by ``unfold`` twice or by a strided ``Conv2d`` then ``flatten(2).transpose(1, 2)``, a
class token ``expand``-ed over the batch, ``trunc_normal_`` position embeddings,
``nn.TransformerEncoder`` of pre-norm GELU layers with ``batch_first=True``; mixup with a
``torch.randperm`` partner and a Beta draw from NumPy, label-smoothed cross entropy, AdamW
without weight decay on 1-d parameters and the embeddings, ``SequentialLR`` of ``LinearLR``
warmup and ``CosineAnnealingLR``, ``clip_grad_norm_``, and the ImageNet example's top-k
``accuracy`` (``topk(maxk, 1, True, True)``, ``pred.t()``, ``eq(...expand_as)``,
``correct[:k].reshape(-1).float().sum(0, keepdim=True).mul_(100.0 / batch_size)``).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchEmbed(nn.Module):
    def __init__(self, patch, dim, conv):
        super().__init__()
        self.patch, self.conv = patch, conv
        if conv:
            self.proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        else:
            self.proj = nn.Linear(3 * patch * patch, dim)

    def forward(self, x):
        if self.conv:
            return self.proj(x).flatten(2).transpose(1, 2)
        p = self.patch
        b, c = x.shape[:2]
        patches = x.unfold(2, p, p).unfold(3, p, p)  # b, c, h/p, w/p, p, p
        patches = patches.permute(0, 2, 3, 1, 4, 5).reshape(b, -1, c * p * p)
        return self.proj(patches)


class ViT(nn.Module):
    def __init__(self, image=16, patch=4, dim=32, depth=2, heads=4, classes=5, conv=True):
        super().__init__()
        self.patch_embed = PatchEmbed(patch, dim, conv)
        n = (image // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, n + 1, dim))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        layer = nn.TransformerEncoderLayer(
            dim, heads, dim_feedforward=2 * dim, dropout=0.0, activation="gelu",
            batch_first=True, norm_first=True,
        )  # fmt: skip
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch_embed(x)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1) + self.pos_embed
        x = self.norm(self.encoder(x))
        return self.head(x[:, 0])


def accuracy(output, target, topk=(1,)):
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def main(argv=None):
    parser = argparse.ArgumentParser(description="a small ViT")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--unfold", action="store_true", help="patches by unfold, not a conv")
    parser.add_argument("--mixup", type=float, default=0.4)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(0)
    np_rng = np.random.default_rng(0)
    model = ViT(conv=not args.unfold)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))

    skip = {"pos_embed", "cls_token"}
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim <= 1 or name in skip:
            no_decay.append(param)
        else:
            decay.append(param)
    optimizer = torch.optim.AdamW(
        [{"params": no_decay, "weight_decay": 0.0}, {"params": decay, "weight_decay": 0.05}],
        lr=1e-3,
    )
    warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=2)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps - 2)
    scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, [warmup, cosine], milestones=[2])
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

    losses = []
    model.train()
    for _ in range(args.steps):
        images = torch.rand(args.batch_size, 3, 16, 16)
        target = torch.randint(0, 5, (args.batch_size,))
        lam = float(np_rng.beta(args.mixup, args.mixup))
        index = torch.randperm(args.batch_size)
        mixed = lam * images + (1 - lam) * images[index, :]
        output = model(mixed)
        loss = lam * criterion(output, target) + (1 - lam) * criterion(output, target[index])
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        losses += [loss.item(), scheduler.get_last_lr()[0]]

    model.eval()
    with torch.no_grad():
        images = torch.rand(16, 3, 16, 16)
        target = torch.randint(0, 5, (16,))
        output = model(images)
        acc1, acc3 = accuracy(output, target, topk=(1, 3))
        losses += [F.cross_entropy(output, target).item(), acc1.item(), acc3.item()]
    return losses


if __name__ == "__main__":
    main()
