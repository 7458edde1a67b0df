"""Hamiltonian neural networks (after greydanus/hamiltonian-nn's ``hnn.py`` and
``experiment-spring``), on a noisy ideal spring, in float64.

An MLP with ``Tanh`` predicting a scalar ``H(q, p)``; the vector field by
``torch.autograd.grad(H.sum(), x, create_graph=True)``, ``split`` into ``dH/dq`` and
``dH/dp`` and re-assembled as ``torch.cat([dHdp, -dHdq], 1)`` (the symplectic gradient);
with ``--baseline`` the same MLP predicting the field directly. Training by Adam with
``weight_decay`` on the MSE to the true derivatives; then a trajectory by a hand-written RK4
under ``torch.enable_grad()`` inside ``torch.no_grad()``, inputs ``clone().detach()
.requires_grad_(True)`` at every stage, and the energy drift of the rolled-out trajectory.
Returns every loss, gradient, parameter and trajectory point.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim):
        super().__init__()
        self.linear1 = nn.Linear(input_dim, hidden_dim)
        self.linear2 = nn.Linear(hidden_dim, hidden_dim)
        self.linear3 = nn.Linear(hidden_dim, output_dim, bias=None)
        for layer in [self.linear1, self.linear2, self.linear3]:
            nn.init.orthogonal_(layer.weight)

    def forward(self, x):
        h = torch.tanh(self.linear1(x))
        h = torch.tanh(self.linear2(h))
        return self.linear3(h)


class HNN(nn.Module):
    def __init__(self, input_dim, differentiable_model, baseline=False):
        super().__init__()
        self.baseline = baseline
        self.differentiable_model = differentiable_model
        self.M = self.permutation_tensor(input_dim)

    def permutation_tensor(self, n):
        M = torch.eye(n)
        return torch.cat([M[n // 2 :], -M[: n // 2]])

    def time_derivative(self, x):
        if self.baseline:
            return self.differentiable_model(x)
        H = self.differentiable_model(x)
        (dH,) = torch.autograd.grad(H.sum(), x, create_graph=True)
        dHdq, dHdp = dH.split(1, dim=1)
        return torch.cat([dHdp, -dHdq], dim=1)

    def field_by_matrix(self, x):
        (dH,) = torch.autograd.grad(self.differentiable_model(x).sum(), x, create_graph=True)
        return dH @ self.M.t()


def spring_data(n, noise=0.05):
    q = torch.rand(n, 1) * 2 - 1
    p = torch.rand(n, 1) * 2 - 1
    x = torch.cat([q, p], dim=1)
    dx = torch.cat([p, -q], dim=1)
    return x + noise * torch.randn(n, 2), dx


def rk4(fun, y0, dt, steps):
    ys = [y0]
    y = y0
    for _ in range(steps):
        k1 = fun(y)
        k2 = fun(y + dt / 2 * k1)
        k3 = fun(y + dt / 2 * k2)
        k4 = fun(y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return torch.stack(ys)


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
    parser.add_argument("--baseline", action="store_true")
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
    output_dim = 2 if args.baseline else 1
    model = HNN(2, MLP(2, 16, output_dim), baseline=args.baseline)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
    x, dxdt = spring_data(20)
    x = x.requires_grad_(True)
    out = []
    for _ in range(args.steps):
        loss = F.mse_loss(model.time_derivative(x), dxdt)
        loss.backward()
        grad = torch.cat([p.grad.flatten() for p in model.parameters()]).clone()
        optimizer.step()
        optimizer.zero_grad()
        out += [loss.item(), grad.norm().item()] + values(model)
    if not args.baseline:
        check = model.field_by_matrix(x) - model.time_derivative(x)
        out.append(check.abs().max().item())

    def field(y):
        with torch.enable_grad():
            y = y.clone().detach().requires_grad_(True)
            return model.time_derivative(y).detach()

    with torch.no_grad():
        path = rk4(field, torch.tensor([[1.0, 0.0]]), 0.1, 6)
    energy = 0.5 * (path**2).sum(-1)
    return out + path.flatten().tolist() + [(energy[-1] - energy[0]).item()]


if __name__ == "__main__":
    main()
