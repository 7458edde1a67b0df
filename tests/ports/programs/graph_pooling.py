"""Graph-level classification with message passing and pooling written in plain PyTorch (as
people write GIN / GraphSAGE / PointNet++ pieces without torch_scatter), on a batch of small
random graphs, in float64.

Graphs batched into one ``edge_index`` with a ``batch`` vector (``repeat_interleave`` of the
node counts, offsets by ``cumsum``); self loops added, duplicate edges removed with
``torch.unique(dim=1)``; degrees by ``bincount``; GIN sum aggregation by ``index_add_``;
GraphSAGE max aggregation by ``scatter_reduce(reduce="amax", include_self=False)`` and mean
by ``scatter_reduce("mean")``; a softmax over each node's incoming edges (an attention
score) by ``scatter_reduce("amax")`` for stability then ``index_add_`` of the
exponentials; a kNN graph from ``torch.cdist`` and ``topk(largest=False)``; readout by a
segment sum (``index_add``), max (``scatter_reduce``) and mean (``torch.zeros(...).
index_add_(...) / counts``), and ``torch.unique(return_inverse=True, return_counts=True)``
over the batch vector; farthest-point sampling with ``argmax`` and ``torch.minimum``.
AdamW, ``clip_grad_value_``. Returns the losses, the sampled nodes, gradients and
parameters.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_graphs(counts):
    """Random graphs: a ring plus chords; node features are positions and degree signs."""
    edges, feats, offset = [], [], 0
    for n in counts.tolist():
        ring = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])
        chords = torch.randint(0, n, (2, n // 2))
        e = torch.cat([ring, ring.flip(0), chords, chords], dim=1) + offset
        edges.append(e)
        feats.append(torch.randn(n, 3))
        offset += n
    batch = torch.repeat_interleave(torch.arange(len(counts)), counts)
    return torch.cat(feats), torch.cat(edges, dim=1), batch


def segment_softmax(scores, index, n):
    top = torch.full((n,), -torch.inf).scatter_reduce(
        0, index, scores, reduce="amax", include_self=False
    )
    exp = (scores - top[index]).exp()
    total = torch.zeros(n).index_add_(0, index, exp)
    return exp / total[index]


class GINLayer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(1))
        self.mlp = nn.Sequential(nn.Linear(d_in, d_out), nn.ReLU(), nn.Linear(d_out, d_out))

    def forward(self, x, edge_index):
        src, dst = edge_index
        agg = torch.zeros_like(x).index_add_(0, dst, x[src])
        return self.mlp((1 + self.eps) * x + agg)


class SAGEMax(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.pool = nn.Linear(d_in, d_in)
        self.lin = nn.Linear(2 * d_in, d_out)
        self.att = nn.Linear(2 * d_in, 1)

    def forward(self, x, edge_index):
        src, dst = edge_index
        n, d = x.shape
        msg = F.relu(self.pool(x[src]))
        index = dst.unsqueeze(1).expand(-1, d)
        mx = torch.zeros(n, d).scatter_reduce(0, index, msg, reduce="amax", include_self=False)
        mean = torch.zeros(n, d).scatter_reduce(0, index, msg, reduce="mean", include_self=True)
        alpha = segment_softmax(self.att(torch.cat([x[dst], x[src]], 1)).squeeze(1), dst, n)
        attended = torch.zeros(n, d).index_add_(0, dst, alpha.unsqueeze(1) * msg)
        return F.normalize(self.lin(torch.cat([x, mx + mean + attended], 1)), dim=1)


class Classifier(nn.Module):
    def __init__(self, classes=2):
        super().__init__()
        self.gin = GINLayer(3, 6)
        self.sage = SAGEMax(6, 6)
        self.head = nn.Linear(18, classes)

    def forward(self, x, edge_index, batch, graphs):
        h = self.sage(F.relu(self.gin(x, edge_index)), edge_index)
        _, inverse, counts = torch.unique(batch, return_inverse=True, return_counts=True)
        d = h.size(1)
        total = torch.zeros(graphs, d).index_add(0, inverse, h)
        top = torch.zeros(graphs, d).scatter_reduce(
            0, inverse.unsqueeze(1).expand(-1, d), h, reduce="amax", include_self=False
        )
        mean = total / counts.unsqueeze(1)
        return self.head(torch.cat([total, top, mean], dim=1))


def farthest_points(pos, k):
    chosen = [0]
    dist = torch.full((pos.size(0),), torch.inf)
    for _ in range(k - 1):
        dist = torch.minimum(dist, (pos - pos[chosen[-1]]).pow(2).sum(1))
        chosen.append(int(dist.argmax()))
    return chosen


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:3].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:3].tolist() + [p.grad.abs().sum().item()]
    return out


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
    model = Classifier()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    out = []
    for _ in range(args.steps):
        counts = torch.randint(3, 7, (4,))
        x, edge_index, batch = make_graphs(counts)
        loops = torch.arange(x.size(0)).repeat(2, 1)
        edge_index = torch.unique(torch.cat([edge_index, loops], dim=1), dim=1)
        degree = torch.bincount(edge_index[1], minlength=x.size(0))
        labels = (counts % 2).long()
        optimizer.zero_grad()
        logits = model(x, edge_index, batch, len(counts))
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        nn.utils.clip_grad_value_(model.parameters(), 0.5)
        optimizer.step()
        out += [loss.item(), float(edge_index.size(1)), degree.double().sum().item()] + values(
            model
        )
    # a kNN graph over node positions, and farthest-point samples
    pos = x[:, :2]
    dist = torch.cdist(pos, pos)
    knn = dist.topk(3, dim=1, largest=False).indices
    out += knn[:, 1:].double().flatten().tolist()[:12]
    out += [float(i) for i in farthest_points(pos, 4)]
    with torch.no_grad():
        out += model(x, edge_index, batch, len(counts)).flatten().tolist()
    return out


if __name__ == "__main__":
    main()
