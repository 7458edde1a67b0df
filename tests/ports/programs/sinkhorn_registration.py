"""Point-cloud registration by optimal transport, in float64, as people write it without a
library: a learnable affine map (``nn.Parameter`` matrix, near the identity by ``torch.eye``,
and a shift) moves a source cloud onto a target cloud. The loss is the debiased Sinkhorn
divergence: squared-distance costs by ``torch.cdist(...) ** 2``, log-domain Sinkhorn
iterations by ``torch.logsumexp`` with uniform weights from ``torch.full(...).log()``, the
transport plan by ``exp`` of potentials plus cost; plus a sliced Wasserstein term (random
directions from ``randn`` and ``F.normalize``, projections sorted by ``torch.sort``). SGD
with momentum and ``MultiStepLR``. Returns the losses, the plan's marginal errors and the
learned map.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinkhorn_potentials(x, y, eps, iters=10):
    cost = torch.cdist(x, y) ** 2
    log_a = torch.full((x.shape[0],), 1.0 / x.shape[0]).log()
    log_b = torch.full((y.shape[0],), 1.0 / y.shape[0]).log()
    f = torch.zeros(x.shape[0])
    g = torch.zeros(y.shape[0])
    for _ in range(iters):
        f = -eps * torch.logsumexp(log_b[None, :] + (g[None, :] - cost) / eps, dim=1)
        g = -eps * torch.logsumexp(log_a[:, None] + (f[:, None] - cost) / eps, dim=0)
    plan = torch.exp(log_a[:, None] + log_b[None, :] + (f[:, None] + g[None, :] - cost) / eps)
    return f, g, plan, log_a.exp(), log_b.exp()


def ot_cost(x, y, eps):
    f, g, plan, a, b = sinkhorn_potentials(x, y, eps)
    return (a * f).sum() + (b * g).sum(), plan, a, b


def sinkhorn_divergence(x, y, eps=0.2):
    xy, plan, a, b = ot_cost(x, y, eps)
    xx, _, _, _ = ot_cost(x, x, eps)
    yy, _, _, _ = ot_cost(y, y, eps)
    return xy - 0.5 * (xx + yy), plan, a, b


def sliced_wasserstein(x, y, projections=8):
    directions = F.normalize(torch.randn(x.shape[1], projections), dim=0)
    px, _ = torch.sort(x @ directions, dim=0)
    py, _ = torch.sort(y @ directions, dim=0)
    return (px - py).pow(2).mean()


class AffineMap(nn.Module):
    def __init__(self, dim=2):
        super().__init__()
        self.matrix = nn.Parameter(torch.eye(dim) + 0.1 * torch.randn(dim, dim))
        self.shift = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return x @ self.matrix.T + self.shift


def make_clouds(n=12):
    t = torch.linspace(0, 2 * math.pi, n + 1)[:-1]
    target = torch.stack([torch.cos(t), 0.5 * torch.sin(t)], dim=1)
    angle = torch.tensor(0.4)
    rotation = torch.stack([torch.stack([angle.cos(), -angle.sin()]),
                            torch.stack([angle.sin(), angle.cos()])])  # fmt: skip
    source = target @ rotation.T * 1.3 + torch.tensor([0.5, -0.2])
    return source + 0.01 * torch.randn(n, 2), target


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
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
    model = AffineMap()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    source, target = make_clouds()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2], gamma=0.5)
    out = []
    for _ in range(args.steps):
        optimizer.zero_grad()
        moved = model(source)
        divergence, plan, a, b = sinkhorn_divergence(moved, target)
        sliced = sliced_wasserstein(moved, target)
        loss = divergence + 0.1 * sliced
        loss.backward()
        optimizer.step()
        scheduler.step()
        row_error = (plan.sum(1) - a).abs().max()
        col_error = (plan.sum(0) - b).abs().max()
        out += [loss.item(), divergence.item(), sliced.item(), col_error.item()]
        out += [row_error.item(), scheduler.get_last_lr()[0]]
    matched = plan.argmax(dim=1)
    out += matched.tolist() + model.matrix.detach().flatten().tolist()
    out += model.shift.grad.tolist()
    return out
