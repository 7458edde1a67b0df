"""Poincaré embeddings of a small taxonomy (Nickel & Kiela), in float64, as the reference
implementations write them: an ``nn.Embedding`` initialised by ``uniform_(-0.05, 0.05)``
under ``no_grad``, the hyperbolic distance by ``torch.acosh`` of a ``clamp_min``-ed
argument, negatives drawn by ``randint`` and the loss a cross entropy over negated
distances with the true pair at index 0; a Riemannian SGD written as an
``torch.optim.Optimizer`` subclass that rescales the Euclidean gradient by
``(1 - |x|²)² / 4`` and projects back into the ball with ``Tensor.renorm_``; then the
evaluation: mean rank of each true pair among its distances (``argsort``), and the
embedding norms of roots against leaves. Returns the losses, ranks and norms.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

TAXONOMY = {
    "entity": ["animal", "plant"],
    "animal": ["mammal", "bird", "fish"],
    "mammal": ["dog", "cat", "whale"],
    "bird": ["eagle", "sparrow"],
    "fish": ["shark", "salmon"],
    "plant": ["tree", "flower"],
    "tree": ["oak", "pine"],
    "flower": ["rose", "tulip"],
}
EPS = 1e-5


def closure_pairs(taxonomy):
    """(child, ancestor) for every ancestor: the transitive closure."""
    parents = {c: p for p, cs in taxonomy.items() for c in cs}
    pairs = []
    for child in parents:
        node = child
        while node in parents:
            node = parents[node]
            pairs.append((child, node))
    return pairs


def poincare_distance(u, v):
    sq_u = torch.clamp(torch.sum(u * u, dim=-1), 0, 1 - EPS)
    sq_v = torch.clamp(torch.sum(v * v, dim=-1), 0, 1 - EPS)
    sq_dist = torch.sum(torch.pow(u - v, 2), dim=-1)
    x = 1 + 2 * sq_dist / ((1 - sq_u) * (1 - sq_v))
    return torch.acosh(x.clamp_min(1 + 1e-7))


class RiemannianSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=0.1, max_norm=1 - EPS):
        super().__init__(params, dict(lr=lr, max_norm=max_norm))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                sq_norm = p.pow(2).sum(dim=-1, keepdim=True)
                riemannian = p.grad * ((1 - sq_norm) ** 2 / 4)
                p.add_(riemannian, alpha=-group["lr"])
                p.renorm_(2, 0, group["max_norm"])
                state = self.state[p]
                state["steps"] = state.get("steps", 0) + 1


class PoincareModel(nn.Module):
    def __init__(self, size, dim=2):
        super().__init__()
        self.lt = nn.Embedding(size, dim)
        with torch.no_grad():
            self.lt.weight.uniform_(-0.05, 0.05)

    def forward(self, inputs):
        e = self.lt(inputs)
        o = e.narrow(1, 1, e.size(1) - 1)
        s = e.narrow(1, 0, 1).expand_as(o)
        return -poincare_distance(s, o)


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--negatives", type=int, default=5)
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
    names = sorted({n for p, cs in TAXONOMY.items() for n in [p, *cs]})
    index = {n: i for i, n in enumerate(names)}
    pairs = torch.tensor([[index[c], index[a]] for c, a in closure_pairs(TAXONOMY)])
    model = PoincareModel(len(names))
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = RiemannianSGD(model.parameters(), lr=0.3)
    out = []
    for epoch in range(args.epochs):
        lr = 0.1 if epoch == 0 else 1.0  # the "burn-in" epoch
        for group in optimizer.param_groups:
            group["lr"] = lr
        for batch in pairs.split(8):
            negatives = torch.randint(0, len(names), (batch.size(0), args.negatives))
            inputs = torch.cat([batch, negatives], dim=1)
            optimizer.zero_grad()
            scores = model(inputs)
            loss = F.cross_entropy(scores, torch.zeros(batch.size(0), dtype=torch.long))
            loss.backward()
            optimizer.step()
            out.append(loss.item())
    with torch.no_grad():
        weights = model.lt.weight
        all_dist = poincare_distance(weights[pairs[:, 0]].unsqueeze(1), weights.unsqueeze(0))
        true_dist = all_dist.gather(1, pairs[:, 1:2])
        ranks = (all_dist < true_dist).sum(1) - (all_dist[torch.arange(len(pairs)), pairs[:, 0]]
                                                 < true_dist.squeeze(1)).long()  # fmt: skip
        order = all_dist.argsort(dim=1)
        norms = weights.norm(dim=1)
    out += [ranks.double().mean().item(), *order[0].tolist(), *norms.tolist()]
    out += [optimizer.state[model.lt.weight]["steps"], norms.max().item() < 1]
    return out
