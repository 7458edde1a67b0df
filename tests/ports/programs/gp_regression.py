"""Exact Gaussian-process regression written by hand (as in the GP chapters people port from
GPML: an ARD RBF kernel, the negative log marginal likelihood through a Cholesky factor), in
float64, with a batch of two independent outputs.

Hyperparameters are unconstrained ``nn.Parameter``s mapped through ``F.softplus`` and
``exp``; the kernel builds scaled squared distances with ``torch.cdist(...).pow(2)`` and
with broadcasting; jitter is added by ``K.diagonal(dim1=-2, dim2=-1).add_(...)`` on a fresh
matrix; ``torch.linalg.cholesky`` on a batch, ``torch.cholesky_solve`` for alpha,
``torch.linalg.solve_triangular`` for the predictive variance, the log determinant from
``L.diagonal(...).log().sum(-1)``; the NLL is checked against
``MultivariateNormal(scale_tril=L).log_prob``. Adam with ``MultiStepLR`` for a few steps, then
L-BFGS (``line_search_fn="strong_wolfe"``) with a closure. Returns every loss, the
hyperparameters and their gradients, and the posterior mean and variance at test points.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import MultivariateNormal


class ExactGP(nn.Module):
    def __init__(self, dims, outputs):
        super().__init__()
        self.raw_lengthscale = nn.Parameter(torch.zeros(outputs, 1, dims))
        self.log_outputscale = nn.Parameter(torch.zeros(outputs, 1, 1))
        self.raw_noise = nn.Parameter(torch.full((outputs,), -1.0))
        self.mean = nn.Parameter(torch.zeros(outputs, 1))

    def kernel(self, a, b):
        ls = F.softplus(self.raw_lengthscale)
        a, b = a / ls, b / ls
        if a.shape == b.shape:
            d2 = torch.cdist(a, b).pow(2)
        else:
            d2 = (a.unsqueeze(-2) - b.unsqueeze(-3)).pow(2).sum(-1)
        return self.log_outputscale.exp() * torch.exp(-0.5 * d2)

    def noise(self):
        return F.softplus(self.raw_noise) + 1e-4

    def factor(self, x):
        K = self.kernel(x, x)
        K.diagonal(dim1=-2, dim2=-1).add_(self.noise().unsqueeze(-1))
        return torch.linalg.cholesky(K)

    def nll(self, x, y):
        L = self.factor(x)
        r = (y - self.mean).unsqueeze(-1)
        alpha = torch.cholesky_solve(r, L)
        n = x.shape[-2]
        quad = (r * alpha).sum((-2, -1))
        logdet = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return 0.5 * quad + logdet + 0.5 * n * math.log(2 * math.pi), L

    def predict(self, x, y, xs):
        L = self.factor(x)
        r = (y - self.mean).unsqueeze(-1)
        alpha = torch.cholesky_solve(r, L)
        Ks = self.kernel(x, xs)
        mean = (Ks.transpose(-1, -2) @ alpha).squeeze(-1) + self.mean
        v = torch.linalg.solve_triangular(L, Ks, upper=False)
        var = self.log_outputscale.exp().squeeze(-1) - v.pow(2).sum(-2)
        return mean, var


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten().tolist()
        if p.grad is not None:
            out += p.grad.flatten().tolist()
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--adam-steps", type=int, default=4)
    parser.add_argument("--lbfgs-steps", type=int, default=2)
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
    model = ExactGP(dims=2, outputs=2)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    x = torch.rand(2, 14, 2) * 4 - 2
    y = torch.stack([torch.sin(x[0, :, 0]) * x[0, :, 1], torch.cos(2 * x[1].sum(-1))])
    y = y + 0.05 * torch.randn(2, 14)
    out = []
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2, 3], gamma=0.3)
    for _ in range(args.adam_steps):
        optimizer.zero_grad()
        nll, L = model.nll(x, y)
        dist = MultivariateNormal(model.mean.expand(2, 14), scale_tril=L)
        loss = nll.sum()
        loss.backward()
        out += [loss.item(), -dist.log_prob(y).sum().item()] + values(model)
        optimizer.step()
        scheduler.step()

    lbfgs = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4,
                              line_search_fn="strong_wolfe")  # fmt: skip

    def closure():
        lbfgs.zero_grad()
        loss = model.nll(x, y)[0].sum()
        loss.backward()
        return loss

    for _ in range(args.lbfgs_steps):
        out.append(lbfgs.step(closure).item())
        out += values(model)
    with torch.no_grad():
        xs = torch.linspace(-2, 2, 5).unsqueeze(-1).repeat(1, 2).expand(2, 5, 2)
        mean, var = model.predict(x, y, xs)
    return out + mean.flatten().tolist() + var.flatten().tolist()


if __name__ == "__main__":
    main()
