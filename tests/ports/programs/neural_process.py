"""A conditional neural process and its latent-variable sibling (after Garnelo et al. and the
deepmind "neural-processes" notebooks as their PyTorch ports write them), on random 1-D sine
curves, in float64.

Contexts and targets split by ``torch.randperm`` and fancy indexing, sorted by ``torch.sort``
and gathered; an encoder over ``torch.cat([x, y], -1)`` averaged by ``mean(dim=1,
keepdim=True)`` and ``expand``-ed over the targets; a decoder whose output is ``chunk``-ed into
a mean and a bounded scale ``0.1 + 0.9 * F.softplus``; the loss from
``torch.distributions.Normal(...).log_prob``. With ``--latent``: a latent path with
``Normal.rsample`` and ``kl_divergence`` of the context posterior from the target posterior
(``Independent`` over the latent dimension). Adam and ``clip_grad_norm_``. Returns every loss,
predictive moment, gradient and parameter.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Independent, Normal, kl_divergence


class NeuralProcess(nn.Module):
    def __init__(self, r_dim=12, z_dim=4, hidden=16, latent=False):
        super().__init__()
        self.latent = latent
        self.encoder = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, r_dim))
        if latent:
            self.latent_encoder = nn.Sequential(
                nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, 2 * z_dim)
            )
        extra = z_dim if latent else 0
        self.decoder = nn.Sequential(
            nn.Linear(r_dim + extra + 1, hidden), nn.ReLU(), nn.Linear(hidden, 2)
        )

    def posterior(self, x, y):
        s = self.latent_encoder(torch.cat([x, y], dim=-1)).mean(dim=1)
        mu, raw = s.chunk(2, dim=-1)
        return Independent(Normal(mu, 0.1 + 0.9 * torch.sigmoid(raw)), 1)

    def forward(self, xc, yc, xt, yt=None):
        r = self.encoder(torch.cat([xc, yc], dim=-1)).mean(dim=1, keepdim=True)
        parts = [r.expand(-1, xt.size(1), -1)]
        kl = None
        if self.latent:
            prior = self.posterior(xc, yc)
            q = self.posterior(xt, yt) if yt is not None else prior
            z = q.rsample()
            parts.append(z.unsqueeze(1).expand(-1, xt.size(1), -1))
            kl = kl_divergence(q, prior).mean() if yt is not None else None
        mu, raw = self.decoder(torch.cat(parts + [xt], dim=-1)).chunk(2, dim=-1)
        return Normal(mu, 0.1 + 0.9 * F.softplus(raw)), kl


def sine_batch(batch, points):
    amplitude = torch.rand(batch, 1, 1) * 1.5 + 0.5
    phase = torch.rand(batch, 1, 1) * math.pi
    x = torch.rand(batch, points, 1) * 6 - 3
    return x, amplitude * torch.sin(x + phase)


def split(x, y, n_context):
    order = torch.randperm(x.size(1))
    xc, yc = x[:, order[:n_context]], y[:, order[:n_context]]
    xt, idx = torch.sort(x, dim=1)
    return xc, yc, xt, torch.gather(y, 1, idx)


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
    parser.add_argument("--latent", action="store_true")
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
    model = NeuralProcess(latent=args.latent)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    out = []
    for _ in range(args.steps):
        x, y = sine_batch(4, 10)
        n_context = int(torch.randint(3, 8, (1,)).item())
        xc, yc, xt, yt = split(x, y, n_context)
        dist, kl = model(xc, yc, xt, yt)
        nll = -dist.log_prob(yt).sum(dim=(1, 2)).mean()
        loss = nll + kl if kl is not None else nll
        optimizer.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        out += [loss.item(), nll.item(), norm.item(), float(n_context)] + values(model)
    model.eval()
    with torch.no_grad():
        x, y = sine_batch(2, 8)
        xc, yc, xt, _ = split(x, y, 4)
        dist, _ = model(xc, yc, xt)
    return out + dist.mean.flatten().tolist() + dist.stddev.flatten().tolist()


if __name__ == "__main__":
    main()
