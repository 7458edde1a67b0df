"""Metric learning with a siamese embedding network, after pytorch/examples ``siamese_network``
and the common triplet-loss tutorials: a shared encoder maps both inputs to L2-normalised
embeddings; training uses a contrastive loss on pairs (``F.pairwise_distance``), a triplet
margin loss with batch-hard mining over ``torch.cdist``, or the pair classifier of the example
(``BCELoss`` on a head over the two embeddings), optionally with a weight-normalized output
layer (the hook-based ``nn.utils.weight_norm``) or a spectrally normalized hidden layer
(``nn.utils.parametrizations.spectral_norm``); evaluation ranks the gallery by
``F.cosine_similarity`` and reports recall@1.

The "identities" are synthetic: each class is a random prototype vector plus noise.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset


class EmbeddingNet(nn.Module):
    def __init__(self, in_features, hidden, emb_dim, weight_norm=False, spectral_norm=False):
        super(EmbeddingNet, self).__init__()
        middle = nn.Linear(hidden, hidden)
        if spectral_norm:
            middle = nn.utils.parametrizations.spectral_norm(middle)
        last = nn.Linear(hidden, emb_dim)
        if weight_norm:
            last = nn.utils.weight_norm(last, dim=None)
        self.net = nn.Sequential(
            # no bias before BatchNorm: its gradient is rounding noise, which RMSprop's
            # normalisation would turn into full-size steps
            nn.Linear(in_features, hidden, bias=False),
            nn.BatchNorm1d(hidden),
            nn.PReLU(),
            nn.Dropout(p=0.1),
            middle,
            nn.LeakyReLU(0.1, inplace=True),
            last,
        )

    def forward(self, x):
        return F.normalize(self.net(x), p=2, dim=1)


class SiameseNetwork(nn.Module):
    def __init__(self, in_features, hidden, emb_dim, weight_norm=False, spectral_norm=False):
        super(SiameseNetwork, self).__init__()
        self.embedding = EmbeddingNet(in_features, hidden, emb_dim, weight_norm, spectral_norm)
        self.fc = nn.Sequential(nn.Linear(emb_dim * 2, hidden), nn.ReLU(inplace=True))
        self.out = nn.Linear(hidden, 1)
        self.sigmoid = nn.Sigmoid()

    def forward_once(self, x):
        return self.embedding(x)

    def forward(self, input1, input2):
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        output = torch.cat((output1, output2), 1)
        output = self.fc(output)
        output = self.out(output)
        return self.sigmoid(output)


class ContrastiveLoss(nn.Module):
    """Hadsell et al.: pull same-class pairs together, push others beyond the margin."""

    def __init__(self, margin=1.0):
        super(ContrastiveLoss, self).__init__()
        self.margin = margin

    def forward(self, output1, output2, label):
        euclidean_distance = F.pairwise_distance(output1, output2, keepdim=True)
        loss_contrastive = torch.mean(
            label * torch.pow(euclidean_distance, 2)
            + (1 - label) * torch.pow(torch.clamp(self.margin - euclidean_distance, min=0.0), 2)
        )
        return loss_contrastive


class PairDataset(Dataset):
    """Pairs (x1, x2, same?) drawn from labelled points; half the pairs share a class."""

    def __init__(self, points, labels, n_pairs, rng):
        self.points, self.labels = points, labels
        by_class = {int(c): np.flatnonzero(labels.numpy() == c) for c in labels.unique()}
        self.pairs = []
        for k in range(n_pairs):
            i = int(rng.integers(len(labels)))
            same = k % 2 == 0
            if same:
                j = int(rng.choice(by_class[int(labels[i])]))
            else:
                j = int(rng.choice(np.flatnonzero(labels.numpy() != labels[i].item())))
            self.pairs.append((i, j, float(same)))

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, index):
        i, j, same = self.pairs[index]
        return self.points[i], self.points[j], torch.tensor([same], dtype=torch.float32)


def batch_hard_triplet_loss(embeddings, labels, margin):
    """For each anchor, its farthest positive and nearest negative in the batch."""
    dist = torch.cdist(embeddings, embeddings, p=2)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    eye = torch.eye(len(labels), dtype=torch.bool)
    hardest_pos = dist.masked_fill(~same | eye, 0.0).max(dim=1).values
    hardest_neg = dist.masked_fill(same, float("inf")).min(dim=1).values
    valid = (same & ~eye).any(dim=1) & (~same).any(dim=1)
    pos_idx = dist.masked_fill(~same | eye, -1.0).argmax(dim=1)
    neg_idx = dist.masked_fill(same, float("inf")).argmin(dim=1)
    functional = F.triplet_margin_loss(
        embeddings[valid], embeddings[pos_idx][valid], embeddings[neg_idx][valid], margin=margin
    )
    by_hand = F.relu(hardest_pos - hardest_neg + margin)[valid].mean()
    return functional, by_hand


def recall_at_1(model, queries, query_labels, gallery, gallery_labels):
    model.eval()
    with torch.no_grad():
        q = model(queries)
        g = model(gallery)
        sim = F.cosine_similarity(q.unsqueeze(1), g.unsqueeze(0), dim=-1)
        top = sim.topk(1, dim=1).indices.squeeze(1)
        recall = (gallery_labels[top] == query_labels).float().mean().item()
        mean_sim = torch.einsum("qd,gd->qg", q, g).diagonal().mean().item()
    model.train()
    return recall, mean_sim


def make_points(rng, prototypes, per_class, noise):
    labels = np.repeat(np.arange(len(prototypes)), per_class)
    points = prototypes[labels] + rng.normal(0.0, noise, size=(len(labels), prototypes.shape[1]))
    return torch.tensor(points, dtype=torch.float32), torch.from_numpy(labels)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every step's loss, then recall@1 and the mean query/gallery similarity."""
    parser = argparse.ArgumentParser(description="siamese / triplet metric learning")
    parser.add_argument("--loss", default="triplet", help="triplet, contrastive or bce")
    parser.add_argument("--features", type=int, default=12)
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=24)
    parser.add_argument("--emb-dim", type=int, default=8)
    parser.add_argument("--margin", type=float, default=0.5)
    parser.add_argument("--weight-norm", action="store_true", help="nn.utils.weight_norm")
    parser.add_argument(
        "--spectral-norm", action="store_true", help="spectral_norm parametrization"
    )
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    prototypes = rng.normal(0.0, 1.0, size=(args.classes, args.features))
    points, labels = make_points(rng, prototypes, 8, 0.7)
    queries, query_labels = make_points(rng, prototypes, 2, 0.7)

    if args.loss == "bce":
        model = SiameseNetwork(
            args.features, args.hidden, args.emb_dim, args.weight_norm, args.spectral_norm
        )
    else:
        model = EmbeddingNet(
            args.features, args.hidden, args.emb_dim, args.weight_norm, args.spectral_norm
        )
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    optimizer = torch.optim.RMSprop(model.parameters(), lr=args.lr, alpha=0.9, momentum=0.5)
    scheduler = StepLR(optimizer, step_size=3, gamma=args.gamma)

    losses = []
    if args.loss == "triplet":
        for _ in range(args.steps):
            idx = torch.randperm(len(labels))[: args.batch_size]
            embeddings = model(points[idx])
            loss, by_hand = batch_hard_triplet_loss(embeddings, labels[idx], args.margin)
            assert torch.allclose(loss, by_hand, atol=1e-5), (loss.item(), by_hand.item())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
    else:
        pairs = PairDataset(points, labels, args.steps * args.batch_size, rng)
        loader = DataLoader(pairs, batch_size=args.batch_size, shuffle=True)
        criterion = ContrastiveLoss(args.margin) if args.loss == "contrastive" else nn.BCELoss()
        for x1, x2, same in loader:
            optimizer.zero_grad()
            if args.loss == "contrastive":
                loss = criterion(model(x1), model(x2), same)
            else:
                loss = criterion(model(x1, x2), same)
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())

    embedder = model.embedding if args.loss == "bce" else model
    recall, mean_sim = recall_at_1(embedder, queries, query_labels, points, labels)
    print(f"losses {[round(v, 4) for v in losses]} | recall@1 {recall:.3f} | sim {mean_sim:.4f}")
    return [*losses, recall, mean_sim]


if __name__ == "__main__":
    main()
