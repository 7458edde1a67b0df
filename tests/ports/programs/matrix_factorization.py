"""Collaborative filtering by matrix factorization, as in the many "recommender systems in
PyTorch" tutorials: user and item ``nn.Embedding`` tables with ``sparse=True`` and per-user
and per-item biases, trained with ``torch.optim.SparseAdam`` on the embeddings and plain Adam
on the dense global bias (the usual split of sparse and dense parameters), MSE on observed
ratings, and RMSE on held-out ones. ``--dense`` trains the same model with dense embeddings
and one Adam, the other common variant; ``--sgd`` uses SGD (sparse gradients too).

The ratings are synthetic: a low-rank matrix plus noise, clipped to 1..5.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MatrixFactorization(nn.Module):
    def __init__(self, n_users, n_items, n_factors=8, sparse=True):
        super().__init__()
        self.user_factors = nn.Embedding(n_users, n_factors, sparse=sparse)
        self.item_factors = nn.Embedding(n_items, n_factors, sparse=sparse)
        self.user_biases = nn.Embedding(n_users, 1, sparse=sparse)
        self.item_biases = nn.Embedding(n_items, 1, sparse=sparse)
        self.global_bias = nn.Parameter(torch.tensor(3.0))
        nn.init.normal_(self.user_factors.weight, std=0.1)
        nn.init.normal_(self.item_factors.weight, std=0.1)
        nn.init.zeros_(self.user_biases.weight)
        nn.init.zeros_(self.item_biases.weight)

    def forward(self, user, item):
        pred = (
            self.global_bias + self.user_biases(user).squeeze(1) + self.item_biases(item).squeeze(1)
        )
        pred = pred + (self.user_factors(user) * self.item_factors(item)).sum(dim=1)
        return pred


def make_ratings(rng, n_users, n_items, rank, density):
    u = rng.normal(size=(n_users, rank))
    v = rng.normal(size=(n_items, rank))
    full = np.clip(3.0 + (u @ v.T) / np.sqrt(rank) + 0.3 * rng.normal(size=(n_users, n_items)),
                   1.0, 5.0)  # fmt: skip
    users, items = np.nonzero(rng.random((n_users, n_items)) < density)
    ratings = full[users, items].astype(np.float32)
    return torch.from_numpy(users), torch.from_numpy(items), torch.from_numpy(ratings)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every batch's loss, each epoch's held-out RMSE."""
    parser = argparse.ArgumentParser(description="matrix factorization")
    parser.add_argument("--users", type=int, default=30)
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--factors", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--dense", action="store_true")
    parser.add_argument("--sgd", action="store_true")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    users, items, ratings = make_ratings(rng, args.users, args.items, 3, 0.4)
    n_test = len(ratings) // 5
    perm = torch.from_numpy(rng.permutation(len(ratings)))
    test_idx, train_idx = perm[:n_test], perm[n_test:]
    train_dl = DataLoader(TensorDataset(users[train_idx], items[train_idx], ratings[train_idx]),
                          batch_size=args.batch_size, shuffle=True)  # fmt: skip

    model = MatrixFactorization(args.users, args.items, args.factors, sparse=not args.dense)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))

    if args.sgd:
        optimizers = [torch.optim.SGD(model.parameters(), lr=args.lr * 10)]
    elif args.dense:
        optimizers = [torch.optim.Adam(model.parameters(), lr=args.lr)]
    else:
        sparse_params = [p for n, p in model.named_parameters() if n != "global_bias"]
        optimizers = [torch.optim.SparseAdam(sparse_params, lr=args.lr),
                      torch.optim.Adam([model.global_bias], lr=args.lr)]  # fmt: skip
    loss_fn = nn.MSELoss()

    losses = []
    for epoch in range(args.epochs):
        model.train()
        for user, item, rating in train_dl:
            for opt in optimizers:
                opt.zero_grad()
            prediction = model(user, item)
            loss = loss_fn(prediction, rating)
            loss.backward()
            for opt in optimizers:
                opt.step()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            pred = model(users[test_idx], items[test_idx])
            rmse = torch.sqrt(loss_fn(pred, ratings[test_idx])).item()
        losses.append(rmse)
        print(f"epoch {epoch}: train {losses[-2]:.4f} test rmse {rmse:.4f}")
    return losses


if __name__ == "__main__":
    main()
