"""A pointer-generator summariser (after See et al.'s pointer-generator networks and the
common PyTorch re-implementations), on a synthetic copy-and-map task, in float64.

The encoder: ``nn.Embedding(padding_idx=0)``, ``pack_padded_sequence`` (sorted lengths) into
a bidirectional ``nn.GRU``, ``pad_packed_sequence``, the two directions' final states joined
by ``torch.cat`` and reduced through ``nn.Linear`` + ``tanh``. The decoder: ``nn.LSTMCell``
stepped in a Python loop with teacher forcing on a fixed schedule, Bahdanau attention
(``baddbmm`` for the score's bias, ``masked_fill`` of padding with ``-inf``, ``softmax``,
``bmm``), a coverage vector summed in place, an ``nn.Bilinear`` gate, the output layer tied
to the embedding (``F.linear(h, self.embed.weight)``), ``p_gen`` from ``sigmoid``, the copy
distribution added by ``scatter_add`` into the vocabulary distribution, the loss
``-torch.log(p.gather(1, target) + eps)`` with padding masked, plus the coverage loss
``torch.minimum(attn, coverage)``. SGD with Nesterov momentum under ``CyclicLR``
(momentum cycled), ``clip_grad_value_``. Returns every loss, attention and every parameter's
and gradient's values.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class PointerGenerator(nn.Module):
    def __init__(self, vocab, dim, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.encoder = nn.GRU(dim, hidden, batch_first=True, bidirectional=True)
        self.reduce = nn.Linear(2 * hidden, hidden)
        self.cell = nn.LSTMCell(dim + 2 * hidden, hidden)
        self.W_h = nn.Linear(2 * hidden, hidden, bias=False)
        self.W_s = nn.Linear(hidden, hidden)
        self.w_c = nn.Parameter(torch.randn(hidden) * 0.1)
        self.v = nn.Linear(hidden, 1, bias=False)
        self.gate = nn.Bilinear(hidden, 2 * hidden, 1)
        self.p_gen = nn.Linear(2 * hidden + hidden + dim, 1)
        self.out = nn.Linear(hidden + 2 * hidden, dim)

    def encode(self, src, lengths):
        packed = pack_padded_sequence(self.embed(src), lengths, batch_first=True)
        outputs, h = self.encoder(packed)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=src.shape[1])
        state = torch.tanh(self.reduce(torch.cat([h[0], h[1]], dim=1)))
        return outputs, state

    def attend(self, enc, enc_feat, s, coverage, pad):
        # score = v^T tanh(W_h h_i + W_s s + w_c c_i)
        feat = enc_feat + self.W_s(s).unsqueeze(1) + coverage.unsqueeze(2) * self.w_c
        scores = self.v(torch.tanh(feat)).squeeze(2).masked_fill(pad, float("-inf"))
        attn = F.softmax(scores, dim=1)
        context = torch.bmm(attn.unsqueeze(1), enc).squeeze(1)
        return attn, context

    def forward(self, src, lengths, tgt, teacher):
        enc, s = self.encode(src, lengths)
        pad = src == 0
        enc_feat = self.W_h(enc)
        h, c = s, torch.zeros_like(s)
        coverage = torch.zeros(src.shape, dtype=enc.dtype)
        context = torch.zeros(src.shape[0], enc.shape[2], dtype=enc.dtype)
        inp = torch.full((src.shape[0],), 1, dtype=torch.long)
        losses, attns = [], []
        for t in range(tgt.shape[1]):
            x = torch.cat([self.embed(inp), context], dim=1)
            h, c = self.cell(x, (h, c))
            attn, context = self.attend(enc, enc_feat, h, coverage, pad)
            hidden = self.out(torch.cat([h, context], dim=1))
            vocab_dist = F.softmax(F.linear(hidden, self.embed.weight), dim=1)
            p_gen = torch.sigmoid(self.p_gen(torch.cat([context, h, self.embed(inp)], 1))
                                  + self.gate(h, context))  # fmt: skip
            dist = (p_gen * vocab_dist).scatter_add(1, src, (1 - p_gen) * attn)
            target = tgt[:, t]
            step_loss = -torch.log(dist.gather(1, target.unsqueeze(1)).squeeze(1) + 1e-12)
            step_loss = step_loss + torch.minimum(attn, coverage).sum(1)
            coverage = coverage + attn
            losses.append(step_loss.masked_fill(target == 0, 0.0))
            attns.append(attn)
            inp = target if teacher[t] else dist.argmax(1).detach()
        loss = torch.stack(losses, 1).sum(1) / (tgt != 0).sum(1)
        return loss.mean(), torch.stack(attns, 1)


def make_batch(rng, batch, vocab, max_len):
    lengths = np.sort(rng.integers(3, max_len + 1, batch))[::-1].copy()
    src = np.zeros((batch, max_len), dtype=np.int64)
    tgt = np.zeros((batch, max_len), dtype=np.int64)
    for i, n in enumerate(lengths):
        words = rng.integers(3, vocab, n)
        src[i, :n] = words
        tgt[i, :n] = np.where(words % 2 == 0, words, (words * 3) % (vocab - 3) + 3)
    return torch.from_numpy(src), torch.from_numpy(lengths), torch.from_numpy(tgt)


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:8].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:8].tolist() + [p.grad.abs().sum().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
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
    rng = np.random.default_rng(0)
    vocab = 12
    model = PointerGenerator(vocab, dim=6, hidden=5)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    scheduler = torch.optim.lr_scheduler.CyclicLR(optimizer, base_lr=0.05, max_lr=0.2,
                                                  step_size_up=2, mode="triangular2")  # fmt: skip
    out = []
    for _ in range(args.steps):
        src, lengths, tgt = make_batch(rng, 3, vocab, 6)
        teacher = [t % 3 != 2 for t in range(tgt.shape[1])]
        loss, attn = model(src, lengths, tgt, teacher)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
        out += [loss.item()] + attn.flatten().tolist() + values(model)
        optimizer.step()
        scheduler.step()
        out += [scheduler.get_last_lr()[0], optimizer.param_groups[0]["momentum"]]
    return out


if __name__ == "__main__":
    main()
