"""Implicit neural representations with sine activations (SIREN, Sitzmann et al.; after the
``explore_siren.ipynb`` notebook's ``SineLayer``, ``gradient``, ``divergence`` and
``laplace``), fitting an image from its gradients (Poisson reconstruction), in float64.

``SineLayer``: ``torch.sin(omega_0 * linear(x))`` with the paper's initialisation
(``uniform_`` under ``no_grad`` with bounds ``1/in`` for the first layer and
``sqrt(6/in)/omega_0`` after it). Coordinates from ``torch.linspace`` and ``torch.meshgrid``
(``indexing="ij"``), ``.clone().detach().requires_grad_(True)`` in the forward so the output's
gradient can be taken with respect to them; the image gradient by
``torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True)``, the
Laplacian as the divergence of that gradient (a Python loop over coordinates of
``autograd.grad`` on each component). The ground-truth gradient comes from the same
function of a known image; the loss is the MSE between gradients, so training is a
second-order backward through ``sin``. Adam. Returns the losses, the Laplacian's statistics
and the fitted image's values up to the constant the gradient loss leaves free.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from torch import nn


class SineLayer(nn.Module):
    def __init__(self, in_features, out_features, bias=True, is_first=False, omega_0=30):
        super().__init__()
        self.omega_0 = omega_0
        self.is_first = is_first
        self.in_features = in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.init_weights()

    def init_weights(self):
        with torch.no_grad():
            if self.is_first:
                self.linear.weight.uniform_(-1 / self.in_features, 1 / self.in_features)
            else:
                bound = np.sqrt(6 / self.in_features) / self.omega_0
                self.linear.weight.uniform_(-bound, bound)

    def forward(self, input):
        return torch.sin(self.omega_0 * self.linear(input))


class Siren(nn.Module):
    def __init__(self, in_features=2, hidden=12, layers=2, out_features=1, omega=30.0):
        super().__init__()
        net = [SineLayer(in_features, hidden, is_first=True, omega_0=omega)]
        for _ in range(layers - 1):
            net.append(SineLayer(hidden, hidden, omega_0=omega))
        final = nn.Linear(hidden, out_features)
        with torch.no_grad():
            bound = np.sqrt(6 / hidden) / omega
            final.weight.uniform_(-bound, bound)
        net.append(final)
        self.net = nn.Sequential(*net)

    def forward(self, coords):
        coords = coords.clone().detach().requires_grad_(True)
        return self.net(coords), coords


def gradient(y, x, grad_outputs=None):
    if grad_outputs is None:
        grad_outputs = torch.ones_like(y)
    return torch.autograd.grad(y, [x], grad_outputs=grad_outputs, create_graph=True)[0]


def divergence(y, x):
    div = 0.0
    for i in range(y.shape[-1]):
        div += torch.autograd.grad(y[..., i], x, torch.ones_like(y[..., i]),
                                   create_graph=True)[0][..., i : i + 1]  # fmt: skip
    return div


def laplace(y, x):
    return divergence(gradient(y, x), x)


def get_mgrid(sidelen, dim=2):
    tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
    mgrid = torch.stack(torch.meshgrid(*tensors, indexing="ij"), dim=-1)
    return mgrid.reshape(-1, dim)


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--side", type=int, default=6)
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
    model = Siren()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    coords = get_mgrid(args.side)
    truth = coords.clone().requires_grad_(True)
    image = torch.sin(3 * truth[:, :1]) * torch.cos(2 * truth[:, 1:]) + truth[:, :1] * truth[:, 1:]
    target_grad = gradient(image, truth).detach()
    optimizer = torch.optim.Adam(lr=1e-4, params=model.parameters())
    out = []
    for _ in range(args.steps):
        model_output, inputs = model(coords)
        img_grad = gradient(model_output, inputs)
        loss = ((img_grad - target_grad) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out += [loss.item(), model_output.detach().std().item()]
    model_output, inputs = model(coords)
    lap = laplace(model_output, inputs)
    out += [lap.mean().item(), lap.abs().max().item()]
    values = (model_output - model_output.mean()).detach()
    out += values[:6, 0].tolist()
    out += model.net[0].linear.weight.grad.flatten()[:4].tolist()
    return out
