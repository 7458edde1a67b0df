"""A BiLSTM-CRF sequence tagger, after the PyTorch tutorial "Advanced: Making Dynamic
Decisions and the Bi-LSTM CRF", batched the way its many NER re-implementations batch it, on
a synthetic tagging task, in float64.

Variable-length sentences padded with ``pad_sequence`` and packed with
``pack_padded_sequence(enforce_sorted=False)`` through a bidirectional ``nn.LSTM``, unpacked
by ``pad_packed_sequence``; a CRF with a ``transitions`` parameter whose START/STOP rows are
written through ``.data``; the partition function by the forward algorithm
(``torch.logsumexp`` over broadcast scores, the padded steps kept by ``torch.where`` on the
mask); the gold path score by ``gather`` and advanced indexing of the transitions with tag
pairs; Viterbi decoding by ``max`` with back-pointers stacked and followed with ``gather``.
SGD with ``weight_decay`` as the tutorial; ``clip_grad_norm_``. Returns the losses, the
decoded paths, gradients and parameters.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

START, STOP, PAD = 3, 4, 0


class BiLSTMCRF(nn.Module):
    def __init__(self, vocab, tags, embedding_dim=6, hidden_dim=8):
        super().__init__()
        self.tags = tags
        self.embed = nn.Embedding(vocab, embedding_dim, padding_idx=PAD)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, bidirectional=True, batch_first=True)
        self.hidden2tag = nn.Linear(hidden_dim, tags)
        # transitions[i, j]: the score of moving from tag j to tag i
        self.transitions = nn.Parameter(torch.randn(tags, tags))
        self.transitions.data[START, :] = -10000.0
        self.transitions.data[:, STOP] = -10000.0

    def features(self, words, lengths):
        packed = pack_padded_sequence(
            self.embed(words), lengths, batch_first=True, enforce_sorted=False
        )
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=words.size(1))
        return self.hidden2tag(out)  # (B, L, T)

    def partition(self, feats, mask):
        b = feats.size(0)
        alpha = torch.full((b, self.tags), -10000.0)
        alpha[:, START] = 0.0
        for t in range(feats.size(1)):
            scores = alpha.unsqueeze(1) + self.transitions.unsqueeze(0) + feats[:, t].unsqueeze(2)
            step = torch.logsumexp(scores, dim=2)
            alpha = torch.where(mask[:, t].unsqueeze(1), step, alpha)
        terminal = alpha + self.transitions[STOP].unsqueeze(0)
        return torch.logsumexp(terminal, dim=1)

    def gold_score(self, feats, tags, mask, lengths):
        b = feats.size(0)
        start = torch.full((b, 1), START, dtype=torch.long)
        padded = torch.cat([start, tags], dim=1)
        emit = feats.gather(2, tags.unsqueeze(2)).squeeze(2)
        trans = self.transitions[padded[:, 1:], padded[:, :-1]]
        score = ((emit + trans) * mask).sum(dim=1)
        last = padded.gather(1, lengths.unsqueeze(1)).squeeze(1)
        return score + self.transitions[STOP, last]

    def neg_log_likelihood(self, words, tags, lengths):
        mask = words != PAD
        feats = self.features(words, lengths)
        return (
            self.partition(feats, mask) - self.gold_score(feats, tags, mask.double(), lengths)
        ).mean()

    @torch.no_grad()
    def viterbi(self, words, lengths):
        mask = words != PAD
        feats = self.features(words, lengths)
        b = feats.size(0)
        score = torch.full((b, self.tags), -10000.0)
        score[:, START] = 0.0
        pointers = []
        for t in range(feats.size(1)):
            best, index = (score.unsqueeze(1) + self.transitions.unsqueeze(0)).max(dim=2)
            step = best + feats[:, t]
            keep = mask[:, t].unsqueeze(1)
            score = torch.where(keep, step, score)
            same = torch.arange(self.tags).expand(b, -1)
            pointers.append(torch.where(keep, index, same))
        terminal = score + self.transitions[STOP].unsqueeze(0)
        best_score, best_last = terminal.max(dim=1)
        path = [best_last]
        for back in reversed(pointers[1:]):
            best_last = back.gather(1, best_last.unsqueeze(1)).squeeze(1)
            path.append(best_last)
        path.reverse()
        return best_score, torch.stack(path, dim=1) * mask


def make_batch(vocab, n=5):
    """Sentences of 2-6 words; a word's tag is 1 if its id is even, 2 if odd, and tag 0 for
    the word after an odd one (a dependency the transitions can learn)."""
    lengths = torch.randint(2, 7, (n,))
    words, tags = [], []
    for length in lengths.tolist():
        w = torch.randint(1, vocab, (length,))
        t = torch.where(w % 2 == 0, 1, 2)
        t[1:] = torch.where(w[:-1] % 2 == 1, torch.zeros_like(t[1:]), t[1:])
        words.append(w)
        tags.append(t)
    return pad_sequence(words, batch_first=True), pad_sequence(tags, batch_first=True), lengths


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:5].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:5].tolist() + [p.grad.abs().sum().item()]
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
    torch.manual_seed(1)
    vocab, tags = 12, 5
    model = BiLSTMCRF(vocab, tags)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=1e-4)
    out = []
    for _ in range(args.steps):
        words, gold, lengths = make_batch(vocab)
        model.zero_grad()
        loss = model.neg_log_likelihood(words, gold, lengths)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        out += [loss.item(), norm.item()] + values(model)
    words, gold, lengths = make_batch(vocab)
    best, paths = model.viterbi(words, lengths)
    return (
        out + best.tolist() + paths.double().flatten().tolist() + gold.double().flatten().tolist()
    )


if __name__ == "__main__":
    main()
