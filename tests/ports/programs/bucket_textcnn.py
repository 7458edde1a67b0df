"""A character-level CNN text classifier (after Kim's CNN for sentence classification and
Zhang et al.'s char-CNN) fed by a length-bucketing data pipeline, in float64.

The data side: a map-style ``Dataset`` returning ``namedtuple`` items, a custom
``torch.utils.data.Sampler`` subclass that sorts indices into length buckets and shuffles
the buckets by ``torch.randperm`` with a ``torch.Generator``, used as ``batch_sampler``; a
``collate_fn`` that pads by ``pad_sequence(batch_first=True, padding_side="left")`` and
delegates the rest to ``default_collate`` (a dict of tensors, floats and strings);
``StackDataset`` of two aligned datasets; ``ChainDataset`` of two ``IterableDataset``s. The
model: ``nn.Embedding.from_pretrained(freeze=True)`` with ``padding_idx`` (unfrozen after
one epoch by ``requires_grad_``), ``F.embedding(max_norm=...)`` renormalising a second
table in place, parallel ``nn.Conv1d`` filters of widths 2, 3 and 4 with
``nn.AdaptiveMaxPool1d(1)``, ``torch.cat`` of the pooled features, dropout, a linear head;
``unpad_sequence`` to recover the lengths; Adadelta and ``ReduceLROnPlateau``.
"""

from __future__ import annotations

import argparse
from collections import namedtuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence, unpad_sequence
from torch.utils.data import (
    ChainDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    Sampler,
    StackDataset,
    default_collate,
)

Item = namedtuple("Item", ["chars", "label", "weight", "text"])
VOCAB = 12


class Texts(Dataset):
    def __init__(self, n=24):
        self.lengths = torch.randint(3, 9, (n,))
        self.items = []
        for i, length in enumerate(self.lengths.tolist()):
            chars = torch.randint(1, VOCAB, (length,))
            label = int((chars == 3).any()) + int((chars == 5).sum() > 1)
            self.items.append(Item(chars, label, 1.0 + 0.1 * (i % 3), f"t{i}"))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class BucketSampler(Sampler):
    def __init__(self, lengths, batch_size, generator):
        self.lengths, self.batch_size, self.generator = lengths, batch_size, generator

    def __iter__(self):
        order = torch.argsort(self.lengths, stable=True).tolist()
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        for j in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[j]

    def __len__(self):
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size


def collate(items):
    chars = pad_sequence([it.chars for it in items], batch_first=True, padding_side="left")
    rest = default_collate(
        [{"label": it.label, "weight": it.weight, "text": it.text} for it in items]
    )
    rest["lengths"] = torch.tensor([len(it.chars) for it in items])
    return chars, rest


class Stream(IterableDataset):
    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(torch.arange(self.start, self.stop, dtype=torch.float64))


class CharCNN(nn.Module):
    def __init__(self, pretrained, d=6, filters=4, classes=3):
        super().__init__()
        self.embed = nn.Embedding.from_pretrained(pretrained, freeze=True, padding_idx=0)
        self.extra = nn.Parameter(torch.randn(VOCAB, 2))
        self.convs = nn.ModuleList(nn.Conv1d(d + 2, filters, k) for k in (2, 3, 4))
        self.pool = nn.AdaptiveMaxPool1d(1)
        self.head = nn.Linear(3 * filters, classes)

    def forward(self, chars):
        with torch.no_grad():  # max_norm renormalises the table's rows in place
            F.embedding(chars, self.extra.data, max_norm=1.0)
        h = torch.cat([self.embed(chars), F.embedding(chars, self.extra)], -1).transpose(1, 2)
        pooled = [self.pool(F.relu(conv(h))).squeeze(-1) for conv in self.convs]
        return self.head(F.dropout(torch.cat(pooled, 1), 0.2, self.training))


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
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
    pretrained = torch.randn(VOCAB, 6)
    model = CharCNN(pretrained)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    data = Texts()
    sampler = BucketSampler(data.lengths, 5, torch.Generator().manual_seed(1))
    loader = DataLoader(data, batch_sampler=sampler, collate_fn=collate)
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0, rho=0.8)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0)
    out = [float(model.embed.weight.requires_grad), model.embed.weight[0].abs().sum().item()]
    for _ in range(args.epochs):
        model.train()
        total = 0.0
        for chars, rest in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(chars), rest["label"], reduction="none")
            loss = (loss * rest["weight"]).mean()
            loss.backward()
            opt.step()
            total += loss.item()
            back = unpad_sequence(chars.flip(1), rest["lengths"], batch_first=True)
            out += [loss.item(), float(chars.shape[1]), float(sum(len(b) for b in back))]
            out += [float(rest["text"][0][1:]), float(rest["label"].dtype == torch.int64)]
        plateau.step(total)
        out.append(opt.param_groups[0]["lr"])
        model.embed.weight.requires_grad_(True)
    out += model.extra.detach().norm(dim=1).tolist()
    out += [p.grad.abs().sum().item() for p in model.parameters() if p.grad is not None]
    stacked = StackDataset(data, torch.arange(len(data)))
    item, index = stacked[7]
    out += [float(index), float(item.label), float(len(stacked))]
    out += [float(v) for v in ChainDataset([Stream(0, 3), Stream(10, 12)])]
    model.eval()
    with torch.no_grad():
        chars, _ = collate([data[i] for i in range(4)])
        out += model(chars).flatten().tolist()
    return out


if __name__ == "__main__":
    main()
