"""A variational autoencoder written with ``torch.distributions``, as the probabilistic
programming style of the VAE example puts it, on small synthetic binary images.

The encoder's posterior ``Independent(Normal(mu, std), 1)`` sampled with ``rsample()``, a
standard normal prior, ``kl_divergence`` between the two Independents, a Bernoulli (or
``--likelihood continuous-bernoulli``) likelihood from logits with ``log_prob``; Adam; then an
importance-weighted estimate of log p(x) from ``rsample((K,))`` draws with ``logsumexp``.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import (
    Bernoulli,
    ContinuousBernoulli,
    Independent,
    Normal,
    kl_divergence,
)


class VAE(nn.Module):
    def __init__(self, x_dim=64, h_dim=32, z_dim=4):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(x_dim, h_dim)
        self.fc21 = nn.Linear(h_dim, z_dim)
        self.fc22 = nn.Linear(h_dim, z_dim)
        self.fc3 = nn.Linear(z_dim, h_dim)
        self.fc4 = nn.Linear(h_dim, x_dim)
        self.z_dim = z_dim

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        mu, logvar = self.fc21(h1), self.fc22(h1)
        return Independent(Normal(mu, torch.exp(0.5 * logvar)), 1)

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return self.fc4(h3)

    def prior(self, batch):
        return Independent(Normal(torch.zeros(batch, self.z_dim), torch.ones(batch, self.z_dim)), 1)


def likelihood(logits, kind):
    if kind == "continuous-bernoulli":
        return Independent(ContinuousBernoulli(logits=logits), 1)
    return Independent(Bernoulli(logits=logits), 1)


def synthetic_binary_images(rng, count, side=8):
    """Random bars: each image lights a few rows or columns of an 8x8 grid (flattened)."""
    images = np.zeros((count, side, side), np.float32)
    for img in images:
        for _ in range(rng.integers(1, 3)):
            k = rng.integers(side)
            if rng.random() < 0.5:
                img[k, :] = 1.0
            else:
                img[:, k] = 1.0
    return torch.from_numpy(images.reshape(count, -1))


def main(argv: list[str] | None = None) -> list[float]:
    """Train; return each batch's negative ELBO and KL, then the test negative ELBO and the
    importance-weighted log-likelihood."""
    parser = argparse.ArgumentParser(description="VAE with torch.distributions")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--likelihood", choices=["bernoulli", "continuous-bernoulli"],
                        default="bernoulli")  # fmt: skip
    parser.add_argument("--samples", type=int, default=8, help="importance samples per image")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    train_x = synthetic_binary_images(rng, 64)
    test_x = synthetic_binary_images(rng, 16)

    model = VAE()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    out: list[float] = []
    for epoch in range(args.epochs):
        model.train()
        for i in range(0, len(train_x), args.batch_size):
            x = train_x[i : i + args.batch_size]
            q = model.encode(x)
            z = q.rsample()
            p_x = likelihood(model.decode(z), args.likelihood)
            kl = kl_divergence(q, model.prior(x.shape[0]))
            loss = (kl - p_x.log_prob(x)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            out += [loss.item(), kl.mean().item()]
        print(f"epoch {epoch}: -ELBO {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        q = model.encode(test_x)
        z = q.rsample((args.samples,))  # (K, batch, z_dim)
        p_x = likelihood(model.decode(z), args.likelihood)
        log_w = p_x.log_prob(test_x) + model.prior(test_x.shape[0]).log_prob(z) - q.log_prob(z)
        log_px = torch.logsumexp(log_w, dim=0) - math.log(args.samples)
        elbo = log_w.mean(0)
    print(f"test -ELBO {-elbo.mean().item():.4f}, log p(x) >= {log_px.mean().item():.4f}")
    out += [-elbo.mean().item(), log_px.mean().item()]
    out += q.base_dist.scale.mean(0).tolist() + [q.entropy().mean().item()]
    return out


if __name__ == "__main__":
    main()
