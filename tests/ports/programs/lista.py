"""Learned ISTA for sparse coding (Gregor & LeCun; after the LISTA tutorials and
VITA-Group/ALISTA-style PyTorch re-implementations), against plain ISTA, on synthetic sparse
codes, in float64.

A dictionary with unit-norm columns (``D / D.norm(dim=0, keepdim=True)``); ISTA with step
``1 / L`` where ``L = torch.linalg.matrix_norm(D, ord=2) ** 2``; the soft threshold
``torch.sign(x) * F.relu(torch.abs(x) - theta)``; LISTA's ``W_e`` and ``S`` as
``Linear(bias=False)`` initialised from the dictionary by ``weight.data.copy_``, per-layer
thresholds in an ``nn.ParameterList`` of ``torch.full`` values, unrolled layers; the NMSE in
dB by ``torch.log10``; Adam and ``ReduceLROnPlateau``. With ``--tied``: ALISTA-style per-layer
step sizes with ``S`` derived from ``W_e`` (``torch.eye(n) - W_e.weight @ D``). Returns every
loss, NMSE, gradient and parameter.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def soft_threshold(x, theta):
    return torch.sign(x) * F.relu(torch.abs(x) - theta)


def ista(y, D, alpha, iterations):
    L = torch.linalg.matrix_norm(D, ord=2) ** 2
    z = torch.zeros(y.size(0), D.size(1))
    for _ in range(iterations):
        z = soft_threshold(z + (y - z @ D.T) @ D / L, alpha / L)
    return z


class LISTA(nn.Module):
    def __init__(self, D, alpha, layers=4, tied=False):
        super().__init__()
        m, n = D.shape
        L = (torch.linalg.matrix_norm(D, ord=2) ** 2).item()
        self.tied, self.layers = tied, layers
        self.register_buffer("D", D.clone())
        self.W_e = nn.Linear(m, n, bias=False)
        self.W_e.weight.data.copy_(D.T / L)
        if tied:
            self.gamma = nn.Parameter(torch.ones(layers))
        else:
            self.S = nn.Linear(n, n, bias=False)
            self.S.weight.data.copy_(torch.eye(n) - D.T @ D / L)
        self.theta = nn.ParameterList(
            [nn.Parameter(torch.full((n,), alpha / L)) for _ in range(layers)]
        )

    def forward(self, y):
        b = self.W_e(y)
        z = soft_threshold(b, self.theta[0])
        for t in range(1, self.layers):
            if self.tied:
                S = torch.eye(self.D.size(1)) - self.W_e.weight @ self.D
                z = soft_threshold(
                    z + self.gamma[t] * (b - z @ (torch.eye(z.size(1)) - S)), self.theta[t]
                )
            else:
                z = soft_threshold(b + self.S(z), self.theta[t])
        return z


def nmse_db(z, target):
    return 10 * torch.log10(((z - target) ** 2).sum() / (target**2).sum())


def problem(batch, D, p=0.2):
    support = (torch.rand(batch, D.size(1)) < p).to(D.dtype)
    z = support * torch.randn(batch, D.size(1))
    return z @ D.T + 0.01 * torch.randn(batch, D.size(0)), z


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
    parser.add_argument("--tied", action="store_true")
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
    D = torch.randn(8, 12)
    D = D / D.norm(dim=0, keepdim=True)
    alpha = 0.05
    model = LISTA(D, alpha, tied=args.tied)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0)
    y_test, z_test = problem(16, D)
    out = [nmse_db(ista(y_test, D, alpha, 4), z_test).item()]
    for _ in range(args.steps):
        y, z = problem(16, D)
        loss = F.mse_loss(model(y), z)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            test = nmse_db(model(y_test), z_test)
        scheduler.step(test)
        out += [loss.item(), test.item(), optimizer.param_groups[0]["lr"]] + values(model)
    return out


if __name__ == "__main__":
    main()
