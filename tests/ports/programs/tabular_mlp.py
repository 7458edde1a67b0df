"""A tabular classifier with categorical embeddings, in the style of the "deep learning on
tabular data in PyTorch" tutorials: a custom Dataset returning dicts, a random train/validation
split, an MLP of Linear + LayerNorm + GELU blocks with a residual connection, AdamW with parameter
groups (no weight decay on biases and norms), optionally weight normalization
(``nn.utils.parametrizations.weight_norm``), a LambdaLR warmup-then-decay schedule, and early
stopping that keeps ``copy.deepcopy(model.state_dict())`` of the best epoch. (The split is a
Subset of a ``torch.randperm`` order: ``random_split`` draws from a generator that the test
harness cannot replay in another framework.)

The table is synthetic: numeric and categorical columns and a label from a fixed rule.
"""

from __future__ import annotations

import argparse
import copy
import math
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrize
from torch.utils.data import DataLoader, Dataset, Subset


class TabularDataset(Dataset):
    def __init__(self, numeric, categorical, labels):
        self.numeric = torch.as_tensor(numeric, dtype=torch.float32)
        self.categorical = torch.as_tensor(categorical, dtype=torch.long)
        self.labels = torch.as_tensor(labels, dtype=torch.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return {
            "numeric": self.numeric[idx],
            "categorical": self.categorical[idx],
            "label": self.labels[idx],
        }


class ResidualBlock(nn.Module):
    def __init__(self, dim, dropout, weight_norm=False):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(
            OrderedDict(
                [
                    ("fc1", nn.Linear(dim, dim * 2)),
                    ("act", nn.GELU()),
                    ("drop", nn.Dropout(dropout)),
                    ("fc2", nn.Linear(dim * 2, dim)),
                ]
            )
        )
        if weight_norm:
            for layer in (self.ff.fc1, self.ff.fc2):
                nn.utils.parametrizations.weight_norm(layer)

    def forward(self, x):
        return x + self.ff(self.norm(x))


class TabularModel(nn.Module):
    def __init__(
        self, n_numeric, cardinalities, emb_dim, hidden, n_blocks, dropout, weight_norm=False
    ):
        super().__init__()
        self.embeddings = nn.ModuleList([nn.Embedding(c, emb_dim) for c in cardinalities])
        self.numeric_norm = nn.BatchNorm1d(n_numeric)
        in_dim = n_numeric + emb_dim * len(cardinalities)
        self.input = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(approximate="tanh"))
        self.blocks = nn.Sequential(
            *[ResidualBlock(hidden, dropout, weight_norm) for _ in range(n_blocks)]
        )
        self.head = nn.Sequential(nn.LayerNorm(hidden), nn.SiLU(), nn.Linear(hidden, 1))
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear) and not parametrize.is_parametrized(module):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.5)

    def forward(self, numeric, categorical):
        embedded = [emb(categorical[:, i]) for i, emb in enumerate(self.embeddings)]
        x = torch.cat([self.numeric_norm(numeric), *embedded], dim=1)
        x = self.blocks(self.input(x))
        return self.head(x).squeeze(-1)


def make_table(rng, n, n_numeric, cardinalities):
    numeric = rng.normal(0.0, 1.0, size=(n, n_numeric)) * np.arange(1, n_numeric + 1)
    categorical = np.stack([rng.integers(0, c, size=n) for c in cardinalities], axis=1)
    effect = np.sin(categorical[:, 0]) - 0.5 * (categorical[:, 1] % 2)
    score = numeric[:, 0] - 0.3 * numeric[:, 1] ** 2 / n_numeric + effect
    labels = (score + rng.normal(0.0, 0.3, size=n) > 0).astype(np.float32)
    return numeric.astype(np.float32), categorical, labels


def parameter_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        if param.ndim < 2 or "norm" in name or name.endswith(".bias"):
            no_decay.append(param)
        else:
            decay.append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def evaluate(model, loader, criterion):
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with torch.inference_mode():
        for batch in loader:
            logits = model(batch["numeric"], batch["categorical"])
            total_loss += criterion(logits, batch["label"]).item() * len(batch["label"])
            preds = (torch.sigmoid(logits) > 0.5).float()
            correct += (preds == batch["label"]).sum().item()
            count += len(batch["label"])
    return total_loss / count, correct / count


def main(argv: list[str] | None = None) -> list[float]:
    """Train with early stopping; every step's loss, each epoch's validation loss, and the
    restored best model's validation loss and accuracy."""
    parser = argparse.ArgumentParser(description="tabular MLP")
    parser.add_argument("--rows", type=int, default=96)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--weight-decay", type=float, default=0.05)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--patience", type=int, default=1)
    parser.add_argument("--pos-weight", type=float, default=None)
    parser.add_argument("--weight-norm", action="store_true", help="weight-normalized blocks")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    cardinalities = [5, 3]
    dataset = TabularDataset(*make_table(rng, args.rows, 4, cardinalities))
    n_val = args.rows // 4
    indices = torch.randperm(len(dataset)).tolist()
    train_set, val_set = Subset(dataset, indices[n_val:]), Subset(dataset, indices[:n_val])
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=32)

    model = TabularModel(
        4, cardinalities, 3, args.hidden, args.blocks, args.dropout, args.weight_norm
    )
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))

    optimizer = torch.optim.AdamW(parameter_groups(model, args.weight_decay), lr=args.lr)
    total_steps = args.epochs * len(train_loader)

    def lr_lambda(step):
        if step < args.warmup:
            return (step + 1) / args.warmup
        progress = (step - args.warmup) / max(1, total_steps - args.warmup)
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
    pos_weight = None if args.pos_weight is None else torch.tensor([args.pos_weight])
    criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)

    losses = []
    best_loss, best_state, bad_epochs = float("inf"), None, 0
    for epoch in range(args.epochs):
        model.train()
        for batch in train_loader:
            optimizer.zero_grad()
            logits = model(batch["numeric"], batch["categorical"])
            loss = criterion(logits, batch["label"])
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
        val_loss, val_acc = evaluate(model, val_loader, criterion)
        losses.append(val_loss)
        print(f"epoch {epoch} | val loss {val_loss:.4f} | val acc {val_acc:.3f}")
        if val_loss < best_loss:
            best_loss, bad_epochs = val_loss, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs > args.patience:
                print("early stopping")
                break

    model.load_state_dict(best_state)
    val_loss, val_acc = evaluate(model, val_loader, criterion)
    # the restored weights must give the best epoch's loss again
    assert math.isclose(val_loss, best_loss, rel_tol=1e-6), (val_loss, best_loss)
    return [*losses, val_loss, val_acc, F.softplus(torch.tensor(best_loss)).item()]


if __name__ == "__main__":
    main()
