"""A character-level language model built from RNN cells, as hand-written char-RNN and
"RNN from cells" tutorials do, on a short repeated text, in float64.

An ``nn.LSTM`` with ``proj_size`` and two layers over ``pack_sequence`` (unsorted, so
``enforce_sorted=False``) of the batch's lines; then a decoder that steps an ``nn.GRUCell`` and
an ``nn.RNNCell(nonlinearity="relu")`` in a Python loop, its hidden state carried across
truncated-BPTT windows with ``detach_()``; output weights tied to the input embedding through
a ``nn.Parameter`` shared by two modules. Users' in-place edits of intermediate tensors: a
slice of the logits scaled through ``logits[:, :2].mul_(0.5)``, ``index_put_`` with
``accumulate=True`` of a bonus on repeated characters, ``masked_scatter`` of a gate,
``as_strided`` windows of the hidden sequence, ``unsqueeze_`` and ``t_()``. Adamax,
``ReduceLROnPlateau`` on the window loss, ``parameters_to_vector`` /
``vector_to_parameters`` to take an averaged copy of the weights and evaluate it. Returns
every loss and every parameter's and gradient's values.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters
from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence

TEXT = "a cat sat on the mat. the rat ate a hat. "


class CellLM(nn.Module):
    def __init__(self, vocab, dim=6, hidden=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.context = nn.LSTM(dim, hidden, num_layers=2, proj_size=3, batch_first=True)
        self.gru = nn.GRUCell(dim + 3, hidden)
        self.rnn = nn.RNNCell(hidden, hidden, nonlinearity="relu")
        self.to_embed = nn.Linear(hidden, dim)
        self.decoder = nn.Linear(dim, vocab)
        self.decoder.weight = self.embed.weight  # weight tying
        self.gate = nn.Parameter(torch.linspace(-1, 1, hidden))

    def summary(self, lines):
        packed = pack_sequence([self.embed(x) for x in lines], enforce_sorted=False)
        out, (h, c) = self.context(packed)
        padded, lengths = pad_packed_sequence(out, batch_first=True)
        return h[-1], padded, lengths

    def forward(self, inputs, state, ctx):
        h1, h2 = state
        steps = []
        for t in range(inputs.shape[1]):
            x = torch.cat([self.embed(inputs[:, t]), ctx], dim=1)
            h1 = self.gru(x, h1)
            h2 = self.rnn(h1, h2)
            steps.append(h2)
        hs = torch.stack(steps, 1)  # (B, T, H)
        flat = hs.contiguous()
        # windows of two consecutive steps, as a user would take with as_strided
        B, T, H = flat.shape
        windows = flat.as_strided((B, T - 1, 2, H), (T * H, H, H, 1))
        mixed = windows.mean(2)
        mask = hs[:, 1:] > 0
        gated = mixed.masked_scatter(
            mask, torch.sigmoid(self.gate).expand_as(mixed)[mask] * mixed[mask]
        )
        logits = self.decoder(torch.tanh(self.to_embed(gated)))
        logits[:, :, :2].mul_(0.5)
        return logits, (h1, h2)


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:8].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:8].tolist() + [p.grad.abs().sum().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument("--bptt", type=int, default=5)
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
    chars = sorted(set(TEXT))
    ids = torch.tensor([chars.index(c) for c in TEXT * 2])
    model = CellLM(len(chars))
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adamax(model.parameters(), lr=0.02, weight_decay=1e-4)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0)
    lines = [ids[0:7], ids[7:11], ids[11:20]]
    batch = 2
    data = ids[: (len(ids) // batch) * batch].view(batch, -1)
    h1 = torch.zeros(batch, 5)
    h2 = torch.zeros(batch, 5)
    average = parameters_to_vector(model.parameters()).detach().clone()
    out = []
    for w in range(args.windows):
        start = w * args.bptt
        inputs = data[:, start : start + args.bptt]
        targets = data[:, start + 2 : start + args.bptt + 1]
        ctx, padded, lengths = model.summary(lines)
        ctx = ctx[:batch]
        h1.detach_()
        h2.detach_()
        logits, (h1, h2) = model(inputs, (h1, h2), ctx)
        bonus = torch.zeros(logits.shape[-1])
        bonus.unsqueeze_(0)
        bonus.index_put_((torch.zeros(3, dtype=torch.long), inputs[0, :3]),
                         torch.full((3,), 0.1), accumulate=True)  # fmt: skip
        loss = F.cross_entropy((logits + bonus).transpose(1, 2), targets)
        loss = loss + 1e-3 * padded.pow(2).sum() / lengths.sum()
        optimizer.zero_grad()
        loss.backward()
        out += [loss.item()] + values(model)
        optimizer.step()
        plateau.step(loss.item() + (0.5 if w == 2 else 0.0))
        out.append(optimizer.param_groups[0]["lr"])
        average.mul_(w / (w + 1)).add_(parameters_to_vector(model.parameters()).detach() / (w + 1))
    weights = torch.zeros(3, 2)
    weights.t_()
    out += weights.shape
    vector_to_parameters(average, model.parameters())
    with torch.no_grad():
        ctx, _, _ = model.summary(lines)
        logits, _ = model(data[:, :6], (torch.zeros(batch, 5), torch.zeros(batch, 5)), ctx[:batch])
        out += logits.flatten().tolist()
    return out


if __name__ == "__main__":
    main()
