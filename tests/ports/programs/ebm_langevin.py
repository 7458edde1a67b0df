"""An energy-based model trained by contrastive divergence with Langevin sampling (after the
IGEBM / JEM recipes as the UvA "Deep Energy Models" tutorial writes them), on points of a 2-D
ring, in float64.

An MLP energy with ``nn.SiLU``; a sampler whose chains start from a replay buffer (95 %, by
``torch.rand(n) < 0.95`` and ``torch.where``) or from uniform noise; Langevin steps
``x.data.add_(-step * grad + noise * torch.randn_like(x))`` with ``grad`` from
``torch.autograd.grad(energy.sum(), x)``, ``x.data.clamp_``, the model in ``eval()`` and its
parameters' ``requires_grad_(False)`` while sampling; the buffer renewed by ``torch.cat`` and
slicing. The loss ``E(pos).mean() - E(neg).mean()`` plus an energy-magnitude regulariser; Adam
with ``betas=(0.0, 0.999)``, ``StepLR``. Returns every loss, energy, gradient and parameter.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn


class Energy(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(2, hidden),
            nn.SiLU(),
            nn.Linear(hidden, hidden),
            nn.SiLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)


class Sampler:
    def __init__(self, model, n, steps=5, step_size=0.1, noise=0.005, capacity=32):
        self.model, self.n, self.steps = model, n, steps
        self.step_size, self.noise, self.capacity = step_size, noise, capacity
        self.buffer = torch.rand(capacity, 2) * 4 - 2

    def sample(self):
        fresh = torch.rand(self.n, 2) * 4 - 2
        idx = torch.randint(0, self.buffer.size(0), (self.n,))
        keep = (torch.rand(self.n) < 0.95).unsqueeze(1)
        x = torch.where(keep, self.buffer[idx], fresh).detach()
        was_training = self.model.training
        self.model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        x.requires_grad_(True)
        for _ in range(self.steps):
            (grad,) = torch.autograd.grad(self.model(x).sum(), x)
            x.data.add_(-self.step_size * grad + self.noise * torch.randn_like(x))
            x.data.clamp_(min=-2.5, max=2.5)
        for p in self.model.parameters():
            p.requires_grad_(True)
        self.model.train(was_training)
        x = x.detach()
        self.buffer = torch.cat([x, self.buffer])[: self.capacity]
        return x


def ring(n):
    angle = torch.rand(n) * 2 * math.pi
    radius = 1.5 + 0.1 * torch.randn(n)
    return torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:6].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:6].tolist() + [p.grad.norm().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--alpha", type=float, default=0.1)
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
    model = Energy()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    sampler = Sampler(model, n=16)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, betas=(0.0, 0.999))
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    out = []
    for _ in range(args.steps):
        pos = ring(16)
        neg = sampler.sample()
        e_pos, e_neg = model(pos), model(neg)
        reg = args.alpha * (e_pos**2 + e_neg**2).mean()
        cdiv = e_pos.mean() - e_neg.mean()
        loss = cdiv + reg
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        out += [loss.item(), cdiv.item(), reg.item()] + neg[:4].flatten().tolist() + values(model)
    out += sampler.buffer.sum(0).tolist() + [scheduler.get_last_lr()[0]]
    return out


if __name__ == "__main__":
    main()
