"""Constrained weights by ``torch.nn.utils.parametrize``, after the PyTorch tutorial
"Parametrizations Tutorial", used for an orthogonal-recurrence RNN on the copy-memory task
(the setting of the expRNN / orthogonal-RNN papers), in float64.

The tutorial's own parametrizations: ``Symmetric`` (``triu() + triu(1).transpose``),
``Skew`` and ``MatrixExponential`` stacked on one weight (``torch.matrix_exp``), a
``right_inverse`` so that assigning ``layer.weight = X`` initialises the original, and
``parametrize.cached()``; then an ``nn.RNNCell`` whose ``weight_hh`` is made orthogonal by
``nn.utils.parametrizations.orthogonal`` (its default map on a square matrix, and
``orthogonal_map="cayley"``), unrolled over the sequence, trained with RMSprop and a
cross-entropy over the recalled tokens; ``parametrizations.weight.original`` read back, and
``remove_parametrizations(leave_parametrized=True)`` at the end. Returns the losses, how far
the recurrent weights are from orthogonal, gradients and parameters.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as P
from torch.nn.utils import parametrizations


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class Skew(nn.Module):
    def forward(self, X):
        A = X.triu(1)
        return A - A.transpose(-1, -2)


class MatrixExponential(nn.Module):
    def forward(self, X):
        return torch.matrix_exp(X)


class Scaled(nn.Module):
    """weight = scale * original, with a right inverse so assignment sets the original."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, X):
        return self.scale * X

    def right_inverse(self, W):
        return W / self.scale


class OrthoRNN(nn.Module):
    def __init__(self, vocab, hidden, orthogonal_map=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.cell = nn.RNNCell(hidden, hidden, nonlinearity="tanh")
        parametrizations.orthogonal(self.cell, "weight_hh", orthogonal_map=orthogonal_map)
        self.readout = nn.Linear(hidden, vocab)
        P.register_parametrization(self.readout, "weight", Scaled(0.5))

    def forward(self, tokens):
        h = torch.zeros(tokens.size(0), self.cell.hidden_size)
        outputs = []
        for t in range(tokens.size(1)):
            h = self.cell(self.embed(tokens[:, t]), h)
            outputs.append(self.readout(h))
        return torch.stack(outputs, dim=1)


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:4].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:4].tolist() + [p.grad.abs().sum().item()]
    return out


def fixed(layer):
    """``layer`` with made-up weights (the tutorial's layers are not in the checkpoint)."""
    with torch.no_grad():
        layer.weight.copy_(torch.linspace(-0.9, 0.8, layer.weight.numel()).view_as(layer.weight))
        layer.bias.fill_(0.1)
    return layer


def tutorial_part(out):
    """The tutorial's layers: symmetric, then skew + matrix exponential (orthogonal)."""
    layer = fixed(nn.Linear(3, 3))
    P.register_parametrization(layer, "weight", Symmetric())
    A = layer.weight
    out += (A - A.T).abs().sum().unsqueeze(0).tolist() + A.flatten().tolist()
    rot = fixed(nn.Linear(3, 3))
    P.register_parametrization(rot, "weight", Skew())
    P.register_parametrization(rot, "weight", MatrixExponential())
    Q = rot.weight
    out += (Q.T @ Q - torch.eye(3)).abs().sum().unsqueeze(0).tolist()
    out += [float(P.is_parametrized(rot)), float(P.is_parametrized(rot, "bias"))]
    out += [float(len(rot.parametrizations.weight))]
    scaled = fixed(nn.Linear(3, 3))
    P.register_parametrization(scaled, "weight", Scaled(2.0))
    scaled.weight = torch.ones(3, 3)  # through right_inverse: the original becomes 0.5
    out += scaled.parametrizations.weight.original.flatten().tolist()
    x = torch.linspace(-1, 1, 6).view(2, 3)
    with P.cached():
        y = rot(x) + rot(x) + scaled(x)
    y.sum().backward()
    out += y.flatten().tolist() + rot.parametrizations.weight.original.grad.flatten().tolist()
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--map", type=str, default=None)
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
    out = tutorial_part([])
    vocab, hidden, delay = 5, 6, 3
    model = OrthoRNN(vocab, hidden, orthogonal_map=args.map)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-2, alpha=0.9)
    for _ in range(args.steps):
        # copy memory: remember 2 tokens, wait `delay` blanks, recall them after a marker
        memory = torch.randint(1, vocab - 1, (4, 2))
        blank = torch.zeros(4, delay, dtype=torch.long)
        marker = torch.full((4, 1), vocab - 1)
        tokens = torch.cat([memory, blank, marker, torch.zeros(4, 1, dtype=torch.long)], 1)
        target = torch.cat([torch.zeros(4, delay + 2, dtype=torch.long), memory], 1)
        optimizer.zero_grad()
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, vocab), target.reshape(-1))
        loss.backward()
        optimizer.step()
        W = model.cell.weight_hh
        gap = (W.T @ W - torch.eye(hidden)).abs().max().item()
        out += [loss.item(), float(gap < 1e-9)] + values(model)
    out += model.cell.weight_hh.detach().flatten().tolist()
    P.remove_parametrizations(model.cell, "weight_hh", leave_parametrized=True)
    P.remove_parametrizations(model.readout, "weight", leave_parametrized=False)
    out += [
        float(P.is_parametrized(model.cell)),
        float(isinstance(model.cell.weight_hh, nn.Parameter)),
    ]
    out += model.readout.weight.detach().flatten().tolist()
    with torch.no_grad():
        logits = model(torch.tensor([[1, 2, 0, 0, 0, vocab - 1, 0]]))
    return out + logits.flatten().tolist() + [float(len(list(model.parameters())))]


if __name__ == "__main__":
    main()
