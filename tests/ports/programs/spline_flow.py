"""A neural spline flow (Durkan et al.; after bayesiains/nflows' ``rational_quadratic.py``
and the "NSF in 200 lines" notebooks), on a 2-D two-moons-like toy, in float64.

Coupling layers with monotonic rational-quadratic splines on ``[-B, B]`` and identity tails:
bin widths and heights by ``softmax`` plus a minimum, knots by ``cumsum`` padded with
``F.pad(value=0.0)`` and scaled, derivatives by ``softplus`` padded with ones, the bin of each
input by ``torch.searchsorted`` (clamped), per-bin values by ``gather``, the spline and its
log-derivative in closed form, ``torch.where`` between the inside and the tails, a boolean
mask buffer choosing the conditioner's half, and alternating masks between layers; with
``--mixing cayley|matrix_exp|householder`` an orthogonal 2x2 rotation between couplings too,
an ``nn.Linear(bias=False)`` under ``nn.utils.parametrizations.orthogonal(orthogonal_map=...)``
(volume preserving: no log-det term; inverted by its ``weight.T``). The base density is
``Independent(Normal(zeros, ones), 1)``. Training maximises the log-likelihood with AdamW and
``CosineAnnealingLR``; then the inverse pass (the spline's quadratic root) is checked against
the forward. Returns the losses, log-likelihoods and round-trip errors.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Independent, Normal

MIN_WIDTH = MIN_HEIGHT = MIN_DERIVATIVE = 1e-3


def rq_spline(x, widths, heights, derivatives, bound, inverse=False):
    """Elementwise monotonic rational-quadratic spline on [-bound, bound], identity outside."""
    bins = widths.shape[-1]
    inside = (x >= -bound) & (x <= bound)
    widths = MIN_WIDTH + (1 - MIN_WIDTH * bins) * F.softmax(widths, dim=-1)
    cumwidths = F.pad(torch.cumsum(widths, dim=-1), (1, 0), value=0.0)
    cumwidths = 2 * bound * cumwidths - bound
    heights = MIN_HEIGHT + (1 - MIN_HEIGHT * bins) * F.softmax(heights, dim=-1)
    cumheights = F.pad(torch.cumsum(heights, dim=-1), (1, 0), value=0.0)
    cumheights = 2 * bound * cumheights - bound
    derivatives = F.pad(MIN_DERIVATIVE + F.softplus(derivatives), (1, 1), value=1.0)
    knots = cumheights if inverse else cumwidths
    xc = x.clamp(-bound, bound).unsqueeze(-1).contiguous()
    idx = torch.searchsorted(knots[..., 1:-1].contiguous(), xc, right=True)
    x_k = cumwidths.gather(-1, idx)[..., 0]
    w_k = (cumwidths[..., 1:] - cumwidths[..., :-1]).gather(-1, idx)[..., 0]
    y_k = cumheights.gather(-1, idx)[..., 0]
    h_k = (cumheights[..., 1:] - cumheights[..., :-1]).gather(-1, idx)[..., 0]
    d_k = derivatives.gather(-1, idx)[..., 0]
    d_k1 = derivatives[..., 1:].gather(-1, idx)[..., 0]
    s_k = h_k / w_k
    xc = xc[..., 0]
    if inverse:
        b_term = h_k * d_k - (xc - y_k) * (d_k1 + d_k - 2 * s_k)
        a = (xc - y_k) * (d_k1 + d_k - 2 * s_k) + h_k * (s_k - d_k)
        c = -s_k * (xc - y_k)
        disc = (b_term.pow(2) - 4 * a * c).clamp(min=0)
        theta = (2 * c) / (-b_term - torch.sqrt(disc))
        out = theta * w_k + x_k
        denom = s_k + (d_k1 + d_k - 2 * s_k) * theta * (1 - theta)
        deriv = s_k.pow(2) * (d_k1 * theta.pow(2) + 2 * s_k * theta * (1 - theta)
                              + d_k * (1 - theta).pow(2))  # fmt: skip
        logdet = -(torch.log(deriv) - 2 * torch.log(denom))
    else:
        theta = (xc - x_k) / w_k
        t1mt = theta * (1 - theta)
        denom = s_k + (d_k1 + d_k - 2 * s_k) * t1mt
        out = y_k + h_k * (s_k * theta.pow(2) + d_k * t1mt) / denom
        deriv = s_k.pow(2) * (d_k1 * theta.pow(2) + 2 * s_k * t1mt + d_k * (1 - theta).pow(2))
        logdet = torch.log(deriv) - 2 * torch.log(denom)
    return torch.where(inside, out, x), torch.where(inside, logdet, torch.zeros_like(x))


class SplineCoupling(nn.Module):
    def __init__(self, mask, bins=5, hidden=16, bound=3.0):
        super().__init__()
        self.register_buffer("mask", mask)
        self.bins, self.bound = bins, bound
        dim = mask.numel()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim * (3 * bins - 1))
        )

    def params(self, x):
        h = self.net(x * self.mask).view(x.size(0), x.size(1), 3 * self.bins - 1)
        w, h_, d = torch.split(h, [self.bins, self.bins, self.bins - 1], dim=-1)
        return w / math.sqrt(16), h_ / math.sqrt(16), d

    def forward(self, x):
        y, logdet = rq_spline(x, *self.params(x), self.bound)
        keep = self.mask.bool()
        return torch.where(keep, x, y), logdet.masked_fill(keep, 0.0).sum(-1)

    def inverse(self, y):
        x, _ = rq_spline(y, *self.params(y), self.bound, inverse=True)
        return torch.where(self.mask.bool(), y, x)


class OrthogonalMixing(nn.Module):
    def __init__(self, orthogonal_map):
        super().__init__()
        self.linear = nn.utils.parametrizations.orthogonal(
            nn.Linear(2, 2, bias=False), orthogonal_map=orthogonal_map
        )

    def forward(self, x):
        return self.linear(x), torch.zeros(x.size(0))

    def inverse(self, y):
        return y @ self.linear.weight


class Flow(nn.Module):
    def __init__(self, layers=2, mixing=None):
        super().__init__()
        masks = [torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])]
        self.layers = nn.ModuleList(SplineCoupling(masks[i % 2]) for i in range(layers))
        if mixing is not None:
            self.mixers = nn.ModuleList(OrthogonalMixing(mixing) for _ in range(layers - 1))
        self.base = Independent(Normal(torch.zeros(2), torch.ones(2)), 1)

    def steps(self):
        for i, layer in enumerate(self.layers):
            if i and hasattr(self, "mixers"):
                yield self.mixers[i - 1]
            yield layer

    def log_prob(self, x):
        total = torch.zeros(x.size(0))
        for layer in self.steps():
            x, logdet = layer(x)
            total = total + logdet
        return self.base.log_prob(x) + total, x

    def inverse(self, z):
        for layer in reversed(list(self.steps())):
            z = layer.inverse(z)
        return z


def moons(n):
    t = math.pi * torch.rand(n)
    upper = torch.rand(n) < 0.5
    x = torch.where(upper, torch.cos(t), 1 - torch.cos(t))
    y = torch.where(upper, torch.sin(t), 0.5 - torch.sin(t))
    return torch.stack([x, y], 1) * 1.5 + 0.1 * torch.randn(n, 2)


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--mixing", choices=["cayley", "matrix_exp", "householder"], default=None)
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
    flow = Flow(mixing=args.mixing)
    if args.init:
        flow.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(flow.state_dict(), args.save_init)
    optimizer = torch.optim.AdamW(flow.parameters(), lr=5e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    out = []
    for _ in range(args.steps):
        x = moons(32)
        log_prob, _ = flow.log_prob(x)
        loss = -log_prob.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        out += [loss.item(), log_prob.max().item(), scheduler.get_last_lr()[0]]
    with torch.no_grad():
        x = moons(16)
        x[0] = torch.tensor([4.0, -3.5])  # in the identity tails
        log_prob, z = flow.log_prob(x)
        back = flow.inverse(z)
    out += log_prob[:6].tolist() + [(back - x).abs().max().item() < 1e-9]
    out += z[:3].flatten().tolist()
    out += flow.layers[0].net[2].weight.grad[14:16, :4].flatten().tolist()
    if args.mixing:
        mixer = flow.mixers[0].linear
        out += mixer.weight.flatten().tolist()
        out += mixer.parametrizations.weight.original.grad.flatten().tolist()
    return out
