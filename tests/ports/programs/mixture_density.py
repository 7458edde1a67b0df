"""A mixture density network (Bishop 1994, as written with ``torch.distributions`` in the
MDN tutorials) on the inverted-sine toy problem with a 2-D output, and a heteroscedastic
low-rank Gaussian head beside it, in float64.

The MDN head: ``nn.Linear`` to ``K`` mixture logits, ``K * D`` means and scales through
``F.elu(x) + 1 + 1e-6`` (the usual positive link), ``view(-1, K, D)``; the density
``MixtureSameFamily(Categorical(logits=...), Independent(Normal(mu, sigma), 1))``, its
``log_prob``, ``mean`` and ``variance``; the low-rank head:
``LowRankMultivariateNormal(loc, cov_factor, cov_diag)`` with ``cov_diag`` through
``F.softplus``, its ``log_prob`` and ``entropy``. Data from ``torch.sin`` with noise, the
inputs sorted by ``torch.sort``. ASGD for one network, Adadelta for the other; a
``clip_grad_value_``; ``CosineAnnealingLR``. Returns every loss, the mixture's statistics at
test points, gradients and parameters.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import (
    Categorical,
    Independent,
    LowRankMultivariateNormal,
    MixtureSameFamily,
    Normal,
)


class MDN(nn.Module):
    def __init__(self, n_hidden=12, n_components=3, out_dim=2):
        super().__init__()
        self.k, self.d = n_components, out_dim
        self.body = nn.Sequential(nn.Linear(1, n_hidden), nn.Tanh())
        self.pi = nn.Linear(n_hidden, n_components)
        self.mu = nn.Linear(n_hidden, n_components * out_dim)
        self.sigma = nn.Linear(n_hidden, n_components * out_dim)

    def forward(self, x):
        h = self.body(x)
        logits = self.pi(h)
        mu = self.mu(h).view(-1, self.k, self.d)
        sigma = (F.elu(self.sigma(h)) + 1 + 1e-6).view(-1, self.k, self.d)
        mix = Categorical(logits=logits)
        comp = Independent(Normal(mu, sigma), 1)
        return MixtureSameFamily(mix, comp)


class LowRankHead(nn.Module):
    def __init__(self, n_hidden=12, out_dim=2, rank=1):
        super().__init__()
        self.out_dim, self.rank = out_dim, rank
        self.body = nn.Sequential(nn.Linear(1, n_hidden), nn.SiLU())
        self.loc = nn.Linear(n_hidden, out_dim)
        self.factor = nn.Linear(n_hidden, out_dim * rank)
        self.diag = nn.Linear(n_hidden, out_dim)

    def forward(self, x):
        h = self.body(x)
        cov_factor = self.factor(h).view(-1, self.out_dim, self.rank)
        return LowRankMultivariateNormal(self.loc(h), cov_factor, F.softplus(self.diag(h)) + 1e-4)


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:6].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:6].tolist() + [p.grad.abs().sum().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
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
    mdn, lowrank = MDN(), LowRankHead()
    if args.init:
        state = torch.load(args.init)
        mdn.load_state_dict(state["mdn"])
        lowrank.load_state_dict(state["lowrank"])
    if args.save_init:
        torch.save({"mdn": mdn.state_dict(), "lowrank": lowrank.state_dict()}, args.save_init)
    opt_mdn = torch.optim.ASGD(mdn.parameters(), lr=5e-2, t0=2)
    opt_lr = torch.optim.Adadelta(lowrank.parameters(), lr=1.0, weight_decay=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt_mdn, T_max=4, eta_min=1e-3)
    out = []
    for _ in range(args.steps):
        y0 = torch.rand(24) * 2 - 1
        y = torch.stack([y0, y0**2], dim=1)
        x = (torch.sin(3 * y0) + 0.5 * y0 + 0.05 * torch.randn(24)).unsqueeze(1)
        x, order = torch.sort(x, dim=0)
        y = y[order.squeeze(1)]
        opt_mdn.zero_grad()
        opt_lr.zero_grad()
        loss_mdn = -mdn(x).log_prob(y).mean()
        dist = lowrank(x)
        loss_lr = -dist.log_prob(y).mean()
        (loss_mdn + loss_lr).backward()
        nn.utils.clip_grad_value_(mdn.parameters(), clip_value=1.0)
        out += [loss_mdn.item(), loss_lr.item(), dist.entropy().mean().item()]
        out += values(mdn) + values(lowrank)
        opt_mdn.step()
        opt_lr.step()
        sched.step()
    with torch.no_grad():
        xs = torch.linspace(-1, 1, 4).unsqueeze(1)
        mix = mdn(xs)
        stats = [
            mix.mean,
            mix.variance,
            mix.mixture_distribution.probs,
            lowrank(xs).covariance_matrix,
        ]
    return out + [v for s in stats for v in s.flatten().tolist()]


if __name__ == "__main__":
    main()
