"""Redundancy-reduction self-supervision: Barlow Twins (after facebookresearch/barlowtwins'
``main.py``) and, with ``--loss vicreg``, VICReg (after facebookresearch/vicreg), on two
augmented views of synthetic feature vectors, in float64.

Views by Gaussian jitter, ``torch.rand(...) < p`` feature dropping and random scaling; a
backbone and a projector of ``Linear(bias=False)``-``BatchNorm1d``-``ReLU``; the Barlow loss
from the cross-correlation of ``nn.BatchNorm1d(affine=False)``-normalised embeddings with
``c.div_(batch)``, ``torch.diagonal(c).add_(-1).pow_(2).sum()`` and the ``off_diagonal``
trick (``flatten()[:-1].view(n - 1, n + 1)[:, 1:]``); VICReg's invariance ``F.mse_loss``,
variance hinge ``F.relu(1 - torch.sqrt(x.var(dim=0) + 1e-4))`` and covariance
``off_diagonal(cov).pow_(2)``. SGD with momentum over two parameter groups (biases and norms
without weight decay, chosen by ``p.ndim == 1``) and a linear warm-up by ``LambdaLR``. Returns
every loss, gradient and parameter, and a linear probe's accuracy on frozen features.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def off_diagonal(x):
    n, m = x.shape
    assert n == m
    return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


def projector(sizes):
    layers = []
    for i in range(len(sizes) - 2):
        layers += [nn.Linear(sizes[i], sizes[i + 1], bias=False), nn.BatchNorm1d(sizes[i + 1])]
        layers.append(nn.ReLU(inplace=True))
    layers.append(nn.Linear(sizes[-2], sizes[-1], bias=False))
    return nn.Sequential(*layers)


class BarlowTwins(nn.Module):
    def __init__(self, in_dim=10, feat=12, sizes=(12, 16, 8), lambd=0.05, loss="barlow"):
        super().__init__()
        self.lambd, self.loss = lambd, loss
        self.backbone = nn.Sequential(nn.Linear(in_dim, feat), nn.ReLU(), nn.Linear(feat, feat))
        self.projector = projector(list(sizes))
        self.bn = nn.BatchNorm1d(sizes[-1], affine=False)

    def forward(self, y1, y2):
        z1 = self.projector(self.backbone(y1))
        z2 = self.projector(self.backbone(y2))
        if self.loss == "vicreg":
            return vicreg(z1, z2)
        c = self.bn(z1).T @ self.bn(z2)
        c.div_(y1.size(0))
        on_diag = torch.diagonal(c).add_(-1).pow_(2).sum()
        off_diag = off_diagonal(c).pow_(2).sum()
        return on_diag + self.lambd * off_diag


def vicreg(x, y, sim=25.0, std=25.0, cov=1.0):
    repr_loss = F.mse_loss(x, y)
    x = x - x.mean(dim=0)
    y = y - y.mean(dim=0)
    std_x = torch.sqrt(x.var(dim=0) + 0.0001)
    std_y = torch.sqrt(y.var(dim=0) + 0.0001)
    std_loss = torch.mean(F.relu(1 - std_x)) / 2 + torch.mean(F.relu(1 - std_y)) / 2
    n, d = x.shape
    cov_x = (x.T @ x) / (n - 1)
    cov_y = (y.T @ y) / (n - 1)
    cov_loss = off_diagonal(cov_x).pow_(2).sum().div(d) + off_diagonal(cov_y).pow_(2).sum().div(d)
    return sim * repr_loss + std * std_loss + cov * cov_loss


def augment(x):
    noisy = x + 0.1 * torch.randn_like(x)
    kept = (torch.rand(x.shape) >= 0.2).to(x.dtype)
    return noisy * kept * (0.8 + 0.4 * torch.rand(x.size(0), 1))


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:5].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:5].tolist() + [p.grad.norm().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--loss", choices=["barlow", "vicreg"], default="barlow")
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
    model = BarlowTwins(loss=args.loss)
    probe = nn.Linear(12, 3)
    if args.init:
        state = torch.load(args.init)
        model.load_state_dict(state["model"])
        probe.load_state_dict(state["probe"])
    if args.save_init:
        torch.save({"model": model.state_dict(), "probe": probe.state_dict()}, args.save_init)
    decayed = [p for p in model.parameters() if p.ndim != 1]
    plain = [p for p in model.parameters() if p.ndim == 1]
    optimizer = torch.optim.SGD(
        [{"params": decayed, "weight_decay": 1e-4}, {"params": plain, "weight_decay": 0.0}],
        lr=0.05,
        momentum=0.9,
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 2))
    centres = torch.randn(3, 10)
    labels = torch.randint(0, 3, (24,))
    data = centres[labels] + 0.5 * torch.randn(24, 10)
    out = []
    for _ in range(args.steps):
        loss = model(augment(data[:16]), augment(data[:16]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        out += [loss.item()] + values(model) + model.bn.running_var[:4].tolist()
    model.eval()
    with torch.no_grad():
        features = model.backbone(data)
    probe_opt = torch.optim.SGD(probe.parameters(), lr=0.1)
    for _ in range(3):
        probe_loss = F.cross_entropy(probe(features), labels)
        probe_opt.zero_grad()
        probe_loss.backward()
        probe_opt.step()
        out.append(probe_loss.item())
    return out + [(probe(features).argmax(1) == labels).double().mean().item()]


if __name__ == "__main__":
    main()
