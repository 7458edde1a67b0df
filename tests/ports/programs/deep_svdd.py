"""One-class Deep SVDD anomaly detection (after lukasruff/Deep-SVDD-PyTorch's
``deepSVDD_trainer.py`` and its bias-free networks), on synthetic normal and anomalous vectors,
in float64.

A network without biases (``Linear(bias=False)``, ``BatchNorm1d(eps=1e-04, affine=False)``,
``F.leaky_relu``); the centre ``c`` as the mean of an initial forward pass over a
``DataLoader`` under ``torch.no_grad()``, its near-zero coordinates pushed to ``+-eps`` by
boolean index writes; the one-class objective ``torch.mean(dist)`` or, with ``--objective
soft-boundary``, ``R ** 2 + mean(torch.max(torch.zeros_like(scores), scores)) / nu`` with the
radius updated from ``torch.quantile(torch.sqrt(dist), 1 - nu)``. Adam with ``amsgrad`` and
``weight_decay``, ``MultiStepLR``. Returns every loss, gradient and parameter, the radius, and
the anomaly scores of a test set.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, in_dim=8, hidden=12, rep_dim=4):
        super().__init__()
        self.rep_dim = rep_dim
        self.fc1 = nn.Linear(in_dim, hidden, bias=False)
        self.bn1 = nn.BatchNorm1d(hidden, eps=1e-04, affine=False)
        self.fc2 = nn.Linear(hidden, rep_dim, bias=False)

    def forward(self, x):
        return self.fc2(F.leaky_relu(self.bn1(self.fc1(x))))


def init_center_c(loader, net, eps=0.1):
    n_samples = 0
    c = torch.zeros(net.rep_dim)
    net.eval()
    with torch.no_grad():
        for (inputs,) in loader:
            outputs = net(inputs)
            n_samples += outputs.shape[0]
            c += torch.sum(outputs, dim=0)
    c /= n_samples
    c[(abs(c) < eps) & (c < 0)] = -eps
    c[(abs(c) < eps) & (c > 0)] = eps
    return c


def get_radius(dist, nu):
    return torch.quantile(torch.sqrt(dist.clone().data), 1 - nu)


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:6].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:6].tolist() + [p.grad.norm().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--objective", choices=["one-class", "soft-boundary"], default="one-class")
    parser.add_argument("--nu", type=float, default=0.1)
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
    net = Net()
    if args.init:
        net.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(net.state_dict(), args.save_init)
    normal = torch.randn(24, 8) * 0.5 + torch.linspace(-1, 1, 8)
    loader = DataLoader(TensorDataset(normal), batch_size=8, shuffle=True)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-6, amsgrad=True)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2], gamma=0.1)
    c = init_center_c(loader, net)
    R = torch.tensor(0.0)
    out = c.tolist()
    net.train()
    for epoch in range(args.epochs):
        for (inputs,) in loader:
            optimizer.zero_grad()
            outputs = net(inputs)
            dist = torch.sum((outputs - c) ** 2, dim=1)
            if args.objective == "soft-boundary":
                scores = dist - R**2
                loss = R**2 + (1 / args.nu) * torch.mean(
                    torch.max(torch.zeros_like(scores), scores)
                )
            else:
                loss = torch.mean(dist)
            loss.backward()
            optimizer.step()
            if args.objective == "soft-boundary" and epoch >= 1:
                R.data = get_radius(dist, args.nu)
            out.append(loss.item())
        scheduler.step()
        out += values(net) + [R.item()] + net.bn1.running_mean[:3].tolist()
    net.eval()
    test = torch.cat([torch.randn(4, 8) * 0.5 + torch.linspace(-1, 1, 8), torch.randn(4, 8) * 2])
    with torch.no_grad():
        dist = torch.sum((net(test) - c) ** 2, dim=1)
        scores = dist - R**2 if args.objective == "soft-boundary" else dist
    return out + scores.tolist()


if __name__ == "__main__":
    main()
