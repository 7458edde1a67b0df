"""Deep embedded clustering (DEC, Xie et al.), in float64, as the common PyTorch ports write it:
an autoencoder pre-trained on reconstruction; k-means++ in plain torch on the embeddings
(``torch.cdist``, ``multinomial`` seeding by squared distances, ``argmin`` assignments,
centroids by ``index_add_`` over ``bincount`` counts with empty clusters kept by
``torch.where``); the centroids copied into a clustering layer's ``nn.Parameter``
(``.data.copy_``); Student's t soft assignments, the sharpened target distribution computed
under ``no_grad`` every few steps, ``F.kl_div(q.log(), p, reduction="batchmean")`` plus the
reconstruction, and the fraction of changed labels as the stopping criterion. Returns the
losses, the k-means inertia and the centroids.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def kmeans(x, k, iters=5):
    centers = x[torch.randint(0, x.size(0), (1,))]
    while centers.size(0) < k:
        d2 = torch.cdist(x, centers).pow(2).min(dim=1).values
        pick = torch.multinomial(d2 / d2.sum(), 1)
        centers = torch.cat([centers, x[pick]])
    for _ in range(iters):
        labels = torch.cdist(x, centers).argmin(dim=1)
        counts = torch.bincount(labels, minlength=k).unsqueeze(1)
        sums = torch.zeros_like(centers).index_add_(0, labels, x)
        centers = torch.where(counts > 0, sums / counts.clamp(min=1), centers)
    inertia = (x - centers[labels]).pow(2).sum()
    return centers, labels, inertia


class AutoEncoder(nn.Module):
    def __init__(self, d_in=6, d_hidden=8, d_embed=2):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(),
                                     nn.Linear(d_hidden, d_embed))  # fmt: skip
        self.decoder = nn.Sequential(nn.Linear(d_embed, d_hidden), nn.ReLU(),
                                     nn.Linear(d_hidden, d_in))  # fmt: skip

    def forward(self, x):
        z = self.encoder(x)
        return z, self.decoder(z)


class ClusteringLayer(nn.Module):
    def __init__(self, n_clusters, d_embed, alpha=1.0):
        super().__init__()
        self.alpha = alpha
        self.clusters = nn.Parameter(torch.empty(n_clusters, d_embed))
        nn.init.xavier_uniform_(self.clusters)

    def forward(self, z):
        sq = torch.sum((z.unsqueeze(1) - self.clusters) ** 2, dim=2)
        q = 1.0 / (1.0 + sq / self.alpha)
        q = q.pow((self.alpha + 1.0) / 2.0)
        return (q.t() / torch.sum(q, dim=1)).t()


def target_distribution(q):
    weight = q**2 / q.sum(0)
    return (weight.t() / weight.sum(1)).t()


def make_data(n=24):
    centers = torch.tensor([[2.0, 0, 0, 1, 0, 0], [0, 2.0, 0, 0, 1, 0], [0, 0, 2.0, 0, 0, 1]])
    labels = torch.arange(n) % 3
    return centers[labels] + 0.3 * torch.randn(n, 6), labels


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pretrain", type=int, default=4)
    parser.add_argument("--steps", type=int, default=6)
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
    ae, cluster = AutoEncoder(), ClusteringLayer(3, 2)
    if args.init:
        state = torch.load(args.init)
        ae.load_state_dict(state["ae"])
        cluster.load_state_dict(state["cluster"])
    if args.save_init:
        torch.save({"ae": ae.state_dict(), "cluster": cluster.state_dict()}, args.save_init)
    x, truth = make_data()
    out = []
    pre = torch.optim.Adam(ae.parameters(), lr=1e-2)
    for _ in range(args.pretrain):
        pre.zero_grad()
        loss = F.mse_loss(ae(x)[1], x)
        loss.backward()
        pre.step()
        out.append(loss.item())
    with torch.no_grad():
        z, _ = ae(x)
    centers, last, inertia = kmeans(z, 3)
    cluster.clusters.data.copy_(centers)
    out += [inertia.item(), *last.tolist()]
    optimizer = torch.optim.SGD(list(ae.parameters()) + list(cluster.parameters()), lr=0.05,
                                momentum=0.9)  # fmt: skip
    for step in range(args.steps):
        if step % 3 == 0:
            with torch.no_grad():
                p = target_distribution(cluster(ae(x)[0]))
                pred = p.argmax(1)
                changed = (pred != last).double().sum().item() / len(pred)
                last = pred
            out.append(changed)
        optimizer.zero_grad()
        z, recon = ae(x)
        q = cluster(z)
        kl = F.kl_div(q.log(), p, reduction="batchmean")
        loss = kl + 0.5 * F.mse_loss(recon, x)
        loss.backward()
        optimizer.step()
        out += [loss.item(), kl.item()]
    out += cluster.clusters.detach().flatten().tolist() + cluster.clusters.grad.flatten().tolist()
    out.append((last == truth).double().mean().item())
    return out
