"""A neural ODE fitted to a spiral (after torchdiffeq's ``ode_demo.py``), with the solver
written by hand as people do when they do not install torchdiffeq: a fixed-step classical
Runge-Kutta loop, backpropagated through, in float64.

The true dynamics ``dy/dt = (y**3) @ A``; random time windows chosen with
``torch.randint`` and gathered by fancy indexing into ``(T, B, D)`` batches; an ``ODEFunc``
(``Linear``-``Tanh``-``Linear`` on ``y**3``, weights ``nn.init.normal_`` / ``constant_``)
with a time input ``torch.cat([y, t.expand(...)], -1)``; RK4 over ``t[i + 1] - t[i]`` with
two sub-steps, trajectories ``torch.stack``-ed; the loss ``torch.mean(torch.abs(pred - y))``.
RMSprop as in the demo, ``clip_grad_norm_`` and ``ExponentialLR``; a ``RunningAverageMeter``;
an evaluation under ``torch.no_grad()``. Returns every loss, gradient and parameter.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn


class ODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 12), nn.Tanh(), nn.Linear(12, 2))
        for m in self.net.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0, std=0.1)
                nn.init.constant_(m.bias, val=0)
        self.nfe = 0

    def forward(self, t, y):
        self.nfe += 1
        return self.net(torch.cat([y**3, t.expand(*y.shape[:-1], 1)], dim=-1))


def rk4_step(func, t, dt, y):
    k1 = func(t, y)
    k2 = func(t + dt / 2, y + dt * k1 / 2)
    k3 = func(t + dt / 2, y + dt * k2 / 2)
    k4 = func(t + dt, y + dt * k3)
    return y + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6


def odeint_rk4(func, y0, t, substeps=2):
    ys = [y0]
    y = y0
    for i in range(len(t) - 1):
        dt = (t[i + 1] - t[i]) / substeps
        for j in range(substeps):
            y = rk4_step(func, t[i] + j * dt, dt, y)
        ys.append(y)
    return torch.stack(ys)


class Lambda(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("A", torch.tensor([[-0.1, 2.0], [-2.0, -0.1]]))

    def forward(self, t, y):
        return torch.mm(y**3, self.A)


class RunningAverageMeter:
    def __init__(self, momentum=0.9):
        self.momentum = momentum
        self.val = None
        self.avg = 0

    def update(self, val):
        self.avg = val if self.val is None else self.avg * self.momentum + val * (1 - self.momentum)
        self.val = val


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:10].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:10].tolist() + [p.grad.norm().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--niters", type=int, default=4)
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
    data_size, batch_time, batch_size = 16, 5, 4
    true_y0 = torch.tensor([[2.0, 0.0]])
    t = torch.linspace(0.0, 1.5, data_size)
    with torch.no_grad():
        true_y = odeint_rk4(Lambda(), true_y0, t, substeps=4)

    func = ODEFunc()
    if args.init:
        func.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(func.state_dict(), args.save_init)
    optimizer = torch.optim.RMSprop(func.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    loss_meter = RunningAverageMeter(0.97)
    out = []
    for _ in range(args.niters):
        optimizer.zero_grad()
        s = torch.randint(0, data_size - batch_time, (batch_size,))
        batch_y0 = true_y[s]  # (M, 1, D)
        batch_t = t[:batch_time]
        batch_y = torch.stack([true_y[s + i] for i in range(batch_time)], dim=0)
        pred_y = odeint_rk4(func, batch_y0, batch_t)
        loss = torch.mean(torch.abs(pred_y - batch_y))
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(func.parameters(), max_norm=0.5)
        out += [loss.item(), norm.item()] + values(func)
        optimizer.step()
        scheduler.step()
        loss_meter.update(loss.item())
    with torch.no_grad():
        pred_y = odeint_rk4(func, true_y0, t)
        test_loss = torch.mean(torch.abs(pred_y - true_y))
    return out + [loss_meter.avg, test_loss.item(), float(func.nfe)] + pred_y[-1].flatten().tolist()


if __name__ == "__main__":
    main()
