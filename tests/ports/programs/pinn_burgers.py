"""A physics-informed neural network for the viscous Burgers equation (after the PINN
tutorials that follow Raissi et al.'s ``Burgers.py``), in float64.

Collocation points ``requires_grad_(True)`` sliced into ``x``/``t`` columns, the network on
``torch.cat([x, t], dim=1)`` with inputs scaled to ``[-1, 1]`` by registered ``lb``/``ub``
buffers and ``nn.init.xavier_normal_`` weights; ``u_x``, ``u_t`` by
``torch.autograd.grad(u, x, grad_outputs=torch.ones_like(u), retain_graph=True,
create_graph=True)[0]`` and ``u_xx`` by differentiating ``u_x`` again; the residual
``u_t + u * u_x - nu * u_xx``; initial and boundary losses from ``-torch.sin(pi * x)`` and
zeros; Adam steps under ``ReduceLROnPlateau``, then ``LBFGS`` with
``tolerance_grad``/``tolerance_change``/``history_size`` and a closure counting its calls.
Returns every loss term, the closure count, gradients and parameters.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn


class PINN(nn.Module):
    def __init__(self, layers, lb, ub):
        super().__init__()
        self.register_buffer("lb", lb)
        self.register_buffer("ub", ub)
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(layers[:-1], layers[1:]))
        for lin in self.linears:
            nn.init.xavier_normal_(lin.weight, gain=1.0)
            nn.init.zeros_(lin.bias)

    def forward(self, x, t):
        h = 2.0 * (torch.cat([x, t], dim=1) - self.lb) / (self.ub - self.lb) - 1.0
        for lin in self.linears[:-1]:
            h = torch.tanh(lin(h))
        return self.linears[-1](h)


def residual(model, x, t, nu):
    u = model(x, t)
    u_t = torch.autograd.grad(u, t, grad_outputs=torch.ones_like(u), retain_graph=True,
                              create_graph=True)[0]  # fmt: skip
    u_x = torch.autograd.grad(u, x, grad_outputs=torch.ones_like(u), retain_graph=True,
                              create_graph=True)[0]  # fmt: skip
    u_xx = torch.autograd.grad(u_x, x, grad_outputs=torch.ones_like(u_x), retain_graph=True,
                               create_graph=True)[0]  # fmt: skip
    return u_t + u * u_x - nu * u_xx


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:6].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:6].tolist() + [p.grad.abs().sum().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--adam-steps", type=int, default=3)
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
    nu = 0.01 / math.pi
    lb, ub = torch.tensor([-1.0, 0.0]), torch.tensor([1.0, 1.0])
    model = PINN([2, 12, 12, 1], lb, ub)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    X_f = lb + (ub - lb) * torch.rand(40, 2)
    x_f = X_f[:, 0:1].clone().requires_grad_(True)
    t_f = X_f[:, 1:2].clone().requires_grad_(True)
    x0 = torch.linspace(-1, 1, 12).unsqueeze(1)
    u0 = -torch.sin(math.pi * x0)
    tb = torch.rand(8, 1)
    mse = nn.MSELoss()

    def losses():
        f = residual(model, x_f, t_f, nu)
        loss_f = torch.mean(f**2)
        loss_0 = mse(model(x0, torch.zeros_like(x0)), u0)
        loss_b = mse(model(-torch.ones_like(tb), tb), torch.zeros_like(tb)) + mse(
            model(torch.ones_like(tb), tb), torch.zeros_like(tb)
        )
        return loss_f, loss_0, loss_b

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0)
    out = []
    for _ in range(args.adam_steps):
        optimizer.zero_grad()
        terms = losses()
        loss = sum(terms)
        loss.backward()
        optimizer.step()
        plateau.step(loss.item())
        out += [t.item() for t in terms] + [optimizer.param_groups[0]["lr"]] + values(model)

    lbfgs = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=5, max_eval=8,
                              history_size=4, tolerance_grad=1e-9, tolerance_change=1e-12,
                              line_search_fn="strong_wolfe")  # fmt: skip
    calls = [0]

    def closure():
        calls[0] += 1
        lbfgs.zero_grad()
        loss = sum(losses())
        loss.backward()
        return loss

    out.append(lbfgs.step(closure).item())
    return out + [float(calls[0])] + values(model)


if __name__ == "__main__":
    main()
