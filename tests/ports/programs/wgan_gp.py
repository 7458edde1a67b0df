"""Wasserstein GAN with gradient penalty (Gulrajani et al.), in the style of the many
``wgan_gp.py`` scripts: an MLP critic without batch norm, ``n_critic`` critic steps per
generator step, and the penalty ``(||grad_x D(x_hat)||_2 - 1)^2`` on random interpolates
computed with ``torch.autograd.grad(..., create_graph=True)`` so that it is trained through.

The data is a synthetic 2-D mixture of eight Gaussians on a ring (the "8 gaussians" toy).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch
import torch.nn as nn
from torch import autograd


class Generator(nn.Module):
    def __init__(self, nz, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(nz, hidden),
            nn.ReLU(True),
            nn.Linear(hidden, hidden),
            nn.ReLU(True),
            nn.Linear(hidden, 2),
        )

    def forward(self, z):
        return self.net(z)


class Critic(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(2, hidden),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden, hidden),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x).view(-1)


def eight_gaussians(rng, n):
    angles = rng.integers(0, 8, size=n) * (2 * math.pi / 8)
    centers = np.stack([np.cos(angles), np.sin(angles)], axis=1) * 2.0
    return (centers + 0.05 * rng.normal(size=(n, 2))).astype(np.float32)


def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1)
    alpha = alpha.expand_as(real)
    interpolates = alpha * real + (1 - alpha) * fake
    interpolates.requires_grad_(True)
    critic_interpolates = critic(interpolates)
    gradients = autograd.grad(
        outputs=critic_interpolates,
        inputs=interpolates,
        grad_outputs=torch.ones_like(critic_interpolates),
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]
    gradients = gradients.view(gradients.size(0), -1)
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean()


def main(argv: list[str] | None = None) -> list[float]:
    """Train; return the critic's cost, the Wasserstein estimate and the penalty of every
    critic step, and the generator's cost of every generator step."""
    parser = argparse.ArgumentParser(description="WGAN-GP on 8 gaussians")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--nz", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--iters", type=int, default=5, help="generator iterations")
    parser.add_argument("--critic-iters", type=int, default=3)
    parser.add_argument("--lambda-gp", type=float, default=10.0)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    netG = Generator(args.nz, args.hidden)
    netD = Critic(args.hidden)
    if args.save_init:
        torch.save({"netG": netG.state_dict(), "netD": netD.state_dict()}, args.save_init)
    if args.init:
        state = torch.load(args.init)
        netG.load_state_dict(state["netG"])
        netD.load_state_dict(state["netD"])

    optimizerD = torch.optim.Adam(netD.parameters(), lr=args.lr, betas=(0.5, 0.9))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=args.lr, betas=(0.5, 0.9))
    one = torch.tensor(1, dtype=torch.float)
    mone = one * -1

    losses = []
    for iteration in range(args.iters):
        # (1) update the critic
        for p in netD.parameters():
            p.requires_grad = True
        for _ in range(args.critic_iters):
            real = torch.from_numpy(eight_gaussians(rng, args.batch_size))
            netD.zero_grad()

            D_real = netD(real).mean()
            D_real.backward(mone)

            noise = torch.randn(args.batch_size, args.nz)
            with torch.no_grad():
                fake = netG(noise)
            D_fake = netD(fake).mean()
            D_fake.backward(one)

            penalty = gradient_penalty(netD, real, fake) * args.lambda_gp
            penalty.backward()

            D_cost = D_fake - D_real + penalty
            Wasserstein_D = D_real - D_fake
            optimizerD.step()
            losses += [D_cost.item(), Wasserstein_D.item(), penalty.item()]

        # (2) update the generator
        for p in netD.parameters():
            p.requires_grad = False
        netG.zero_grad()
        noise = torch.randn(args.batch_size, args.nz)
        fake = netG(noise)
        G = netD(fake).mean()
        G.backward(mone)
        G_cost = -G
        optimizerG.step()
        losses.append(G_cost.item())
        print(f"iter {iteration}: D {D_cost.item():.4f} W {Wasserstein_D.item():.4f}"
              f" G {G_cost.item():.4f}")  # fmt: skip

    return losses


if __name__ == "__main__":
    main()
