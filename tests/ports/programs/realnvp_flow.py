"""A RealNVP normalizing flow on the two-moons toy, as written in many flow tutorials:
affine coupling layers with alternating binary masks held as buffers
(``register_buffer``), scale networks ending in ``tanh`` and translation networks, the
log-determinant summed over couplings, a standard-normal prior from
``torch.distributions.MultivariateNormal``, the negative log-likelihood trained with Adam,
and sampling by the inverse pass under ``torch.no_grad()``.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch import distributions


class RealNVP(nn.Module):
    def __init__(self, nets, nett, mask, prior):
        super().__init__()
        self.prior = prior
        self.register_buffer("mask", mask)
        self.t = nn.ModuleList([nett() for _ in range(len(mask))])
        self.s = nn.ModuleList([nets() for _ in range(len(mask))])

    def g(self, z):
        x = z
        for i in range(len(self.t)):
            x_ = x * self.mask[i]
            s = self.s[i](x_) * (1 - self.mask[i])
            t = self.t[i](x_) * (1 - self.mask[i])
            x = x_ + (1 - self.mask[i]) * (x * torch.exp(s) + t)
        return x

    def f(self, x):
        log_det_J, z = x.new_zeros(x.shape[0]), x
        for i in reversed(range(len(self.t))):
            z_ = self.mask[i] * z
            s = self.s[i](z_) * (1 - self.mask[i])
            t = self.t[i](z_) * (1 - self.mask[i])
            z = (1 - self.mask[i]) * (z - t) * torch.exp(-s) + z_
            log_det_J -= s.sum(dim=1)
        return z, log_det_J

    def log_prob(self, x):
        z, logp = self.f(x)
        return self.prior.log_prob(z) + logp

    def sample(self, batchSize):
        z = self.prior.sample((batchSize, 1))
        x = self.g(z)
        return x


def make_moons(rng, n, noise=0.05):
    """Two interleaving half circles (as sklearn.datasets.make_moons)."""
    n_out = n // 2
    n_in = n - n_out
    outer = np.stack(
        [np.cos(np.linspace(0, np.pi, n_out)), np.sin(np.linspace(0, np.pi, n_out))], 1
    )
    inner = np.stack([1 - np.cos(np.linspace(0, np.pi, n_in)),
                      1 - np.sin(np.linspace(0, np.pi, n_in)) - 0.5], 1)  # fmt: skip
    x = np.concatenate([outer, inner]) + noise * rng.normal(size=(n, 2))
    return x.astype(np.float32)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every step's loss, then the mean and spread of samples drawn from the flow."""
    parser = argparse.ArgumentParser(description="RealNVP on two moons")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--couplings", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    h = args.hidden
    nets = lambda: nn.Sequential(nn.Linear(2, h), nn.LeakyReLU(), nn.Linear(h, h),  # noqa: E731
                                 nn.LeakyReLU(), nn.Linear(h, 2), nn.Tanh())  # fmt: skip
    nett = lambda: nn.Sequential(nn.Linear(2, h), nn.LeakyReLU(), nn.Linear(h, h),  # noqa: E731
                                 nn.LeakyReLU(), nn.Linear(h, 2))  # fmt: skip
    masks = torch.from_numpy(np.array([[0, 1], [1, 0]] * (args.couplings // 2)).astype(np.float32))
    prior = distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
    flow = RealNVP(nets, nett, masks, prior)
    if args.save_init:
        torch.save(flow.state_dict(), args.save_init)
    if args.init:
        flow.load_state_dict(torch.load(args.init))

    optimizer = torch.optim.Adam([p for p in flow.parameters() if p.requires_grad], lr=args.lr)
    losses = []
    for t in range(args.steps):
        noisy_moons = torch.from_numpy(make_moons(rng, args.batch_size))
        loss = -flow.log_prob(noisy_moons).mean()
        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        optimizer.step()
        losses.append(loss.item())
        if t % 4 == 0:
            print("iter %s:" % t, "loss = %.3f" % loss.item())

    with torch.no_grad():
        z = torch.randn(128, 2)
        x = flow.g(z)
        z_back, _ = flow.f(x)
    losses += x.mean(0).tolist() + x.std(0).tolist()
    # the inverse pass undoes the forward one (to float32 rounding, which differs by library)
    losses.append(float(torch.allclose(z_back, z, atol=1e-4)))
    return losses


if __name__ == "__main__":
    main()
