"""word2vec skip-gram with negative sampling, in float64, as the tutorials write it: a vocabulary
from ``collections.Counter`` over a toy corpus, (center, context) pairs from a window, a
``TensorDataset`` in a shuffling ``DataLoader``, negatives from the unigram distribution to
the 3/4 power by ``torch.multinomial(..., replacement=True)``, two ``nn.Embedding`` tables
(the input one ``uniform_``-initialised, the output one zeroed, optionally ``sparse=True``
with ``SparseAdam``), scores by ``bmm`` and the loss by ``F.logsigmoid``; then nearest
neighbours by cosine similarity (``F.normalize``, ``mm``, ``topk``) and an analogy by vector
arithmetic. Returns the losses, neighbours and a few embedding values.
"""

from __future__ import annotations

import argparse
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

CORPUS = """the king rules the kingdom and the queen rules the kingdom
the man walks to the city and the woman walks to the city
a king is a man and a queen is a woman
the prince is the son of the king and the princess is the daughter of the queen
the city has a king the kingdom has a city""".split()


class SkipGram(nn.Module):
    def __init__(self, vocab_size, dim, sparse=False):
        super().__init__()
        self.in_embed = nn.Embedding(vocab_size, dim, sparse=sparse)
        self.out_embed = nn.Embedding(vocab_size, dim, sparse=sparse)
        bound = 0.5 / dim
        self.in_embed.weight.data.uniform_(-bound, bound)
        self.out_embed.weight.data.zero_()

    def forward(self, center, context, negatives):
        v = self.in_embed(center).unsqueeze(2)  # (B, D, 1)
        u_pos = self.out_embed(context).unsqueeze(1)  # (B, 1, D)
        u_neg = self.out_embed(negatives)  # (B, K, D)
        pos = F.logsigmoid(torch.bmm(u_pos, v).squeeze())
        neg = F.logsigmoid(-torch.bmm(u_neg, v).squeeze(2)).sum(1)
        return -(pos + neg).mean()


def build(window=2):
    counts = Counter(CORPUS)
    vocab = sorted(counts, key=lambda w: (-counts[w], w))
    index = {w: i for i, w in enumerate(vocab)}
    ids = [index[w] for w in CORPUS]
    pairs = []
    for i in range(len(ids)):
        for j in range(max(0, i - window), min(len(ids), i + window + 1)):
            if i != j:
                pairs.append((ids[i], ids[j]))
    freq = torch.tensor([counts[w] for w in vocab], dtype=torch.float64)
    noise = freq.pow(0.75)
    return vocab, index, torch.tensor(pairs), noise / noise.sum()


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--sparse", action="store_true")
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
    vocab, index, pairs, noise = build()
    model = SkipGram(len(vocab), 6, sparse=args.sparse)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.sparse:
        optimizer = torch.optim.SparseAdam(list(model.parameters()), lr=0.05)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    loader = DataLoader(TensorDataset(pairs[:, 0], pairs[:, 1]), batch_size=64, shuffle=True)
    out = []
    for _ in range(args.epochs):
        total = 0.0
        for center, context in loader:
            negatives = torch.multinomial(noise, center.size(0) * 4, replacement=True)
            negatives = negatives.view(center.size(0), 4)
            optimizer.zero_grad()
            loss = model(center, context, negatives)
            loss.backward()
            optimizer.step()
            total += loss.item() * center.size(0)
        out.append(total / len(pairs))
    with torch.no_grad():
        emb = F.normalize(model.in_embed.weight, dim=1)
        sims = emb @ emb.t()
        top = sims[index["king"]].topk(4)
        out += top.indices.tolist() + top.values.tolist()
        query = emb[index["king"]] - emb[index["man"]] + emb[index["woman"]]
        best = torch.mm(emb, query.unsqueeze(1)).squeeze(1).argsort(descending=True)[:3]
        out += best.tolist()
    out += model.out_embed.weight[:2].flatten().tolist()
    return out
