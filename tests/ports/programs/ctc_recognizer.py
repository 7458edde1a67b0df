"""A sequence recognizer trained with CTC, in the style of small speech / handwriting
recognition scripts: variable-length feature sequences sorted and padded with
``pad_sequence``, a bidirectional LSTM (or GRU) run over ``pack_padded_sequence`` and
unpacked with ``pad_packed_sequence``, a linear head with ``log_softmax`` transposed to
(T, N, C), ``nn.CTCLoss(blank=0, zero_infinity=True)`` with per-sample input and target
lengths (targets concatenated into one 1-D tensor), Adam with gradient clipping, and greedy
decoding (argmax, collapse repeats, drop blanks).

The data is synthetic: each symbol of a label sequence is emitted for a few frames of a
noisy one-hot feature vector.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence


class Recognizer(nn.Module):
    def __init__(self, n_features, hidden, n_classes, cell="lstm", num_layers=2):
        super().__init__()
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(n_features, hidden, num_layers=num_layers, bidirectional=True,
                       batch_first=True, dropout=0.0)  # fmt: skip
        self.fc = nn.Linear(2 * hidden, n_classes)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, out_lengths = pad_packed_sequence(out, batch_first=True)
        logits = self.fc(out)
        return F.log_softmax(logits, dim=-1), out_lengths


def make_utterances(rng, n, n_symbols, n_features):
    """Per utterance: features (T, F) and the label sequence (1..n_symbols, no blanks)."""
    features, labels = [], []
    for _ in range(n):
        label = rng.integers(1, n_symbols + 1, size=rng.integers(2, 5))
        frames = []
        for symbol in label:
            one_hot = np.zeros(n_features, dtype=np.float32)
            one_hot[symbol % n_features] = 1.0
            frames += [one_hot] * int(rng.integers(2, 4))
            frames.append(np.zeros(n_features, dtype=np.float32))  # a pause
        x = np.stack(frames) + 0.1 * rng.normal(size=(len(frames), n_features))
        features.append(torch.from_numpy(x.astype(np.float32)))
        labels.append(torch.from_numpy(label))
    return features, labels


def collate(features, labels):
    input_lengths = torch.tensor([len(f) for f in features])
    target_lengths = torch.tensor([len(t) for t in labels])
    padded = pad_sequence(features, batch_first=True)
    targets = torch.cat(labels)
    return padded, input_lengths, targets, target_lengths


def greedy_decode(log_probs, lengths, blank=0):
    best = log_probs.argmax(dim=-1)
    decoded = []
    for seq, length in zip(best, lengths):
        seq = torch.unique_consecutive(seq[: int(length)])
        decoded.append([int(s) for s in seq if s != blank])
    return decoded


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every step's loss, then the evaluation loss and the symbols decoded right."""
    parser = argparse.ArgumentParser(description="CTC recognizer")
    parser.add_argument("--cell", choices=["lstm", "gru"], default="lstm")
    parser.add_argument("--symbols", type=int, default=5)
    parser.add_argument("--features", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=6)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--reduction", default="mean")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    n = args.batch_size * args.batches
    features, labels = make_utterances(rng, n + args.batch_size, args.symbols, args.features)

    model = Recognizer(args.features, args.hidden, args.symbols + 1, args.cell)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    ctc_loss = nn.CTCLoss(blank=0, reduction=args.reduction, zero_infinity=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    losses = []
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(n).tolist()
        for b in range(args.batches):
            idx = order[b * args.batch_size : (b + 1) * args.batch_size]
            x, input_lengths, targets, target_lengths = collate(
                [features[i] for i in idx], [labels[i] for i in idx]
            )
            log_probs, out_lengths = model(x, input_lengths)
            loss = ctc_loss(log_probs.transpose(0, 1), targets, out_lengths, target_lengths)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            optimizer.step()
            losses.append(loss.item())
        print(f"epoch {epoch}: loss {losses[-1]:.4f}")

    model.eval()
    with torch.no_grad():
        x, input_lengths, targets, target_lengths = collate(features[n:], labels[n:])
        log_probs, out_lengths = model(x, input_lengths)
        losses.append(
            ctc_loss(log_probs.transpose(0, 1), targets, out_lengths, target_lengths).item()
        )
        decoded = greedy_decode(log_probs, out_lengths)
    correct = sum(
        sum(int(a == b) for a, b in zip(d, t.tolist())) for d, t in zip(decoded, labels[n:])
    )
    losses.append(float(correct))
    return losses


if __name__ == "__main__":
    main()
