"""An imbalanced-classification data pipeline built from ``torch.utils.data``, the way the
"Datasets & DataLoaders" tutorial and the class-imbalance recipes assemble one, in float64.

A map-style ``Dataset`` of synthetic records (a dict per item), ``random_split`` by
fractions with a seeded ``torch.Generator`` (its lengths: its order is the library's own
generator's), the split made from one ``randperm`` into ``Subset``s, a ``Subset`` of the
training part, ``ConcatDataset`` with a ``TensorDataset`` of extra minority samples, class
weights ``1 / count`` from ``torch.bincount`` turned into per-sample weights for a
``WeightedRandomSampler(replacement=True)``, a ``DataLoader`` with that sampler, a custom
``collate_fn`` (stacked features, a length-padded token field by ``pad_sequence``) and
``drop_last``; a ``BatchSampler`` over a ``SequentialSampler`` for evaluation; an
``IterableDataset`` split by ``get_worker_info()`` (None in the main process). A small
model with a mean-pooled token embedding, Adagrad, class-weighted ``cross_entropy``, and
per-class recall by ``bincount``. Returns the losses, the indices the samplers drew, the
metrics, gradients and parameters.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    Subset,
    TensorDataset,
    WeightedRandomSampler,
    get_worker_info,
    random_split,
)


class Records(Dataset):
    """Items of a feature vector, a variable-length token list and a label (class 2 rare)."""

    def __init__(self, n):
        g = torch.Generator().manual_seed(7)
        self.labels = torch.tensor([0, 1, 0, 1, 0, 1, 0, 0, 2, 1] * (n // 10))
        self.features = torch.rand(n, 3, generator=g) + self.labels.unsqueeze(1) * 0.5
        self.lengths = 1 + torch.arange(n) % 4

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        tokens = (torch.arange(int(self.lengths[i])) + int(self.labels[i]) * 3) % 9 + 1
        return {"x": self.features[i], "tokens": tokens, "y": self.labels[i]}


class Extra(TensorDataset):
    """Extra minority samples, as dicts too."""

    def __getitem__(self, i):
        x, y = super().__getitem__(i)
        return {"x": x, "tokens": torch.tensor([7, 8]), "y": y}


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(start, self.n, step):
            yield torch.tensor([float(i), float(i % 3)])


def collate(batch):
    return {
        "x": torch.stack([b["x"] for b in batch]),
        "tokens": pad_sequence([b["tokens"] for b in batch], batch_first=True),
        "y": torch.stack([b["y"] for b in batch]),
    }


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4, padding_idx=0)
        self.fc = nn.Sequential(nn.Linear(7, 8), nn.Tanh(), nn.Linear(8, 3))

    def forward(self, x, tokens):
        mask = (tokens != 0).unsqueeze(-1).double()
        pooled = (self.embed(tokens) * mask).sum(1) / mask.sum(1).clamp(min=1)
        return self.fc(torch.cat([x, pooled], dim=1))


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:4].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:4].tolist() + [p.grad.abs().sum().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
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
    data = Records(40)
    # random_split's lengths from fractions (its order comes from the library's own
    # generator); the split itself from one randperm, as random_split makes it
    parts = random_split(data, [0.6, 0.25, 0.15], generator=torch.Generator().manual_seed(42))
    out = [float(len(p)) for p in parts] + [float(sorted(parts[0].indices) != parts[0].indices)]
    order = torch.randperm(len(data)).tolist()
    sizes = [len(p) for p in parts]
    train_part, val_part, test_part = (
        Subset(data, order[sum(sizes[:k]) : sum(sizes[: k + 1])]) for k in range(3)
    )
    out += [float(i) for i in train_part.indices[:8]] + [float(len(test_part))]
    train_subset = Subset(data, train_part.indices[:20])
    extra = Extra(torch.rand(4, 3) + 1.0, torch.full((4,), 2))
    train_set = ConcatDataset([train_subset, extra])
    labels = torch.stack([train_set[i]["y"] for i in range(len(train_set))])
    counts = torch.bincount(labels, minlength=3)
    class_weight = 1.0 / counts.double()
    sample_weight = class_weight[labels]
    sampler = WeightedRandomSampler(sample_weight, num_samples=len(train_set), replacement=True)
    loader = DataLoader(
        train_set, batch_size=5, sampler=sampler, collate_fn=collate, drop_last=True
    )
    out += counts.double().tolist() + [float(len(loader))]

    model = Model()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1, lr_decay=0.01)
    weights = torch.tensor([1.0, 1.0, 2.0])
    for _ in range(args.epochs):
        model.train()
        drawn = []
        for batch in loader:
            optimizer.zero_grad()
            logits = model(batch["x"], batch["tokens"])
            loss = F.cross_entropy(logits, batch["y"], weight=weights)
            loss.backward()
            optimizer.step()
            drawn += batch["y"].double().tolist()
            out.append(loss.item())
        out += drawn + values(model)

    model.eval()
    eval_batches = BatchSampler(SequentialSampler(val_part), batch_size=3, drop_last=False)
    correct = torch.zeros(3)
    total = torch.zeros(3)
    with torch.no_grad():
        for indices in eval_batches:
            batch = collate([val_part[i] for i in indices])
            pred = model(batch["x"], batch["tokens"]).argmax(1)
            hit = pred == batch["y"]
            correct += torch.bincount(batch["y"][hit], minlength=3).double()
            total += torch.bincount(batch["y"], minlength=3).double()
            out += [float(len(indices))]
    recall = correct / total.clamp(min=1)
    out += recall.tolist()
    stream = DataLoader(Stream(7), batch_size=3)
    for batch in stream:
        out += batch.flatten().tolist()
    return out


if __name__ == "__main__":
    main()
