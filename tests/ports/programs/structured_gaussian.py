"""Structured parameterisations: a network predicting a full-covariance Gaussian (after the
multivariate-output regression recipes that fill a Cholesky factor from a vector), and
Kronecker / block-diagonal factorised layers (after the "KronA" / Monarch-style adapters and
grouped linear layers written with ``torch.kron`` and ``torch.block_diag``), in float64.

The Cholesky factor from ``torch.tril_indices(d, d, offset=-1)`` (below the diagonal, set
by advanced-index assignment) plus ``torch.diag_embed(F.softplus(diag) + eps)``; the loss
``-MultivariateNormal(mu, scale_tril=L).log_prob(y)`` beside the hand-written one from
``torch.diagonal(L, dim1=-2, dim2=-1).log().sum(-1)`` and a batched triangular solve;
``torch.triu_indices`` for the covariance's unique entries; a Kronecker-factored linear
layer ``x @ torch.kron(A, B).T`` checked against the reshape identity ``B @ X @ A^T`` with
``torch.einsum``; ``torch.block_diag(*blocks)`` grouped weights; inputs on a grid made by
``torch.cartesian_prod``; ``torch.outer``, ``torch.addmm``/``baddbmm``/``tensordot``;
AdamW under ``CosineAnnealingLR``.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import MultivariateNormal

D = 3


class GaussianHead(nn.Module):
    def __init__(self, d_in):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, 10), nn.Tanh())
        self.mu = nn.Linear(10, D)
        self.diag = nn.Linear(10, D)
        self.off = nn.Linear(10, D * (D - 1) // 2)
        self.register_buffer("rows_cols", torch.tril_indices(D, D, offset=-1))

    def forward(self, x):
        h = self.body(x)
        L = torch.diag_embed(F.softplus(self.diag(h)) + 1e-3)
        rows, cols = self.rows_cols
        L[:, rows, cols] = self.off(h)
        return self.mu(h), L


class KronLinear(nn.Module):
    def __init__(self, a=(2, 3), b=(2, 2)):
        super().__init__()
        self.A = nn.Parameter(torch.randn(*a) * 0.5)
        self.B = nn.Parameter(torch.randn(*b) * 0.5)
        self.blocks = nn.ParameterList(nn.Parameter(torch.randn(2, 2) * 0.3) for _ in range(3))
        self.bias = nn.Parameter(torch.zeros(a[0] * b[0]))

    def forward(self, x):
        W = torch.kron(self.A, self.B)
        grouped = torch.block_diag(*self.blocks)
        return torch.addmm(self.bias, x @ grouped, W.T), W


def nll_by_hand(mu, L, y):
    diff = (y - mu).unsqueeze(-1)
    z = torch.linalg.solve_triangular(L, diff, upper=False).squeeze(-1)
    logdet = torch.diagonal(L, dim1=-2, dim2=-1).log().sum(-1)
    return 0.5 * z.pow(2).sum(-1) + logdet + 0.5 * D * torch.log(torch.tensor(2 * torch.pi))


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
    models = {"gauss": GaussianHead(2), "kron": KronLinear()}
    if args.init:
        state = torch.load(args.init)
        for k, m in models.items():
            m.load_state_dict(state[k])
    if args.save_init:
        torch.save({k: m.state_dict() for k, m in models.items()}, args.save_init)
    grid = torch.cartesian_prod(torch.linspace(-1, 1, 4), torch.linspace(0, 1, 3))
    mix = torch.tensor([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.2, -0.3, 0.5]])
    y = torch.stack([grid[:, 0], grid[:, 1] ** 2, grid.sum(1)], 1) + torch.randn(12, D) @ mix.T
    params = list(models["gauss"].parameters()) + list(models["kron"].parameters())
    opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.05)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    xk = torch.randn(5, 6)
    target = torch.randn(5, 4)
    out = []
    for _ in range(args.steps):
        opt.zero_grad()
        mu, L = models["gauss"](grid)
        nll = -MultivariateNormal(mu, scale_tril=L).log_prob(y).mean()
        hand = nll_by_hand(mu, L, y).mean()
        pred, W = models["kron"](xk)
        A, B = models["kron"].A, models["kron"].B
        X = (xk @ torch.block_diag(*models["kron"].blocks)).view(5, 3, 2)
        by_identity = torch.einsum("ij,njk,lk->nil", B, X.transpose(1, 2), A).reshape(5, 4)
        mse = F.mse_loss(pred, target)
        loss = nll + mse
        loss.backward()
        opt.step()
        sched.step()
        cov = L @ L.transpose(-1, -2)
        iu = torch.triu_indices(D, D)
        out += [loss.item(), nll.item(), hand.item(), mse.item(), sched.get_last_lr()[0]]
        out += cov[0, iu[0], iu[1]].tolist()
        out += [(pred - models["kron"].bias - by_identity).abs().max().item(), W.sum().item()]
    out += [p.grad.abs().sum().item() for p in params]
    a, b = torch.randn(3), torch.randn(4)
    M = torch.randn(2, 3, 4)
    out += torch.outer(a, b).sum(0).tolist()
    out += torch.baddbmm(torch.ones(2, 3, 3), M, M.transpose(1, 2), beta=0.5, alpha=2.0)[
        1, 0
    ].tolist()
    out += torch.tensordot(M, torch.randn(4, 3, 2), dims=([1, 2], [1, 0])).flatten().tolist()
    return out


if __name__ == "__main__":
    main()
