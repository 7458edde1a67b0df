"""A deep equilibrium layer (Bai et al.'s tutorial form), in float64: the forward solves
``z = tanh(W z + U x + b)`` by a fixed-point iteration under ``torch.no_grad()`` until the
relative residual (``norm().item()``) falls under a tolerance, then re-engages the autograd
graph with one more application; the backward solves the implicit adjoint equation inside a
hook registered on the output (``register_hook``) by its own fixed-point iteration of
vector-Jacobian products, ``torch.autograd.grad(f0, z0, y, retain_graph=True)``, removing
the hook while it runs (``handle.remove()``). A classifier head, Adam, and a check of the
implicit gradient against unrolled backpropagation through many iterations. Returns the
losses, the iteration counts and residuals, and the gradients both ways.
"""

from __future__ import annotations

import argparse

import torch
import torch.autograd as autograd
import torch.nn as nn
import torch.nn.functional as F


def fixed_point(f, x0, max_iter=60, tol=1e-10):
    f0 = x0
    res = []
    for _ in range(max_iter):
        x = f0
        f0 = f(x)
        res.append((f0 - x).norm().item() / (1e-5 + f0.norm().item()))
        if res[-1] < tol:
            break
    return f0, res


class TanhFixedPointLayer(nn.Module):
    def __init__(self, out_features):
        super().__init__()
        self.linear = nn.Linear(out_features, out_features, bias=False)

    def forward(self, z, x):
        return torch.tanh(self.linear(z) + x)


class DEQFixedPoint(nn.Module):
    def __init__(self, f, **kwargs):
        super().__init__()
        self.f = f
        self.kwargs = kwargs

    def forward(self, x):
        with torch.no_grad():
            z, self.forward_res = fixed_point(lambda z: self.f(z, x), torch.zeros_like(x),
                                              **self.kwargs)  # fmt: skip
        z = self.f(z, x)
        z0 = z.clone().detach().requires_grad_()
        f0 = self.f(z0, x)

        def backward_hook(grad):
            if self.hook is not None:
                self.hook.remove()
                torch.cuda.synchronize() if torch.cuda.is_available() else None
            g, self.backward_res = fixed_point(
                lambda y: autograd.grad(f0, z0, y, retain_graph=True)[0] + grad,
                grad, **self.kwargs)  # fmt: skip
            return g

        if z.requires_grad:
            self.hook = z.register_hook(backward_hook)
        return z


class Model(nn.Module):
    def __init__(self, d_in=4, d_hidden=6, classes=3):
        super().__init__()
        self.inp = nn.Linear(d_in, d_hidden)
        layer = TanhFixedPointLayer(d_hidden)
        with torch.no_grad():
            layer.linear.weight.mul_(0.5)
        self.deq = DEQFixedPoint(layer, tol=1e-10, max_iter=80)
        self.head = nn.Linear(d_hidden, classes)

    def forward(self, x):
        return self.head(self.deq(self.inp(x)))


def unrolled(model, x, steps=80):
    h = model.inp(x)
    z = torch.zeros_like(h)
    for _ in range(steps):
        z = model.deq.f(z, h)
    return model.head(z)


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
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
    model = Model()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    out = []
    for _ in range(args.steps):
        x = torch.randn(5, 4)
        y = torch.randint(0, 3, (5,))
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        out += [loss.item(), len(model.deq.forward_res), len(model.deq.backward_res)]
        out += [model.deq.forward_res[-1] < 1e-10, model.deq.backward_res[-1] < 1e-10]
    x, y = torch.randn(5, 4), torch.randint(0, 3, (5,))
    implicit = torch.autograd.grad(F.cross_entropy(model(x), y), model.inp.weight)[0]
    direct = torch.autograd.grad(F.cross_entropy(unrolled(model, x), y), model.inp.weight)[0]
    out += implicit.flatten()[:6].tolist() + [torch.allclose(implicit, direct, atol=1e-8)]
    out += model.deq.f.linear.weight.grad[0].tolist()
    return out
