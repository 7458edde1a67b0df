"""Visual reasoning with FiLM (Perez et al.; after ethanjperez/film's ``filmed_net.py`` and the
CLEVR-style "FiLM in PyTorch" re-implementations), on synthetic images and variable-length
questions, in float64.

A question encoder of ``nn.Embedding(padding_idx=0)`` and an ``nn.GRU`` over
``pack_padded_sequence(..., enforce_sorted=False)``, whose last hidden state a ``Linear``
turns into one ``(gamma, beta)`` pair per block (``view`` and ``unbind``); coordinate maps by
``torch.meshgrid(indexing="ij")`` of ``linspace``, ``cat``-ed to the features; residual blocks
of a 1x1 ``Conv2d``, a 3x3 ``Conv2d`` and ``nn.BatchNorm2d(affine=False)`` modulated by
``gamma.view(B, C, 1, 1) * x + beta``; a classifier over ``amax(dim=(2, 3))``. Loss
``F.cross_entropy(label_smoothing=0.1)``; Adam with ``weight_decay``, ``clip_grad_norm_``.
Returns every loss, accuracy, gradient, parameter and running statistic.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence


def coord_map(batch, h, w):
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
    return torch.stack([ys, xs]).unsqueeze(0).expand(batch, -1, -1, -1)


class FiLMedBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.input_proj = nn.Conv2d(channels + 2, channels, kernel_size=1)
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(channels, affine=False)

    def forward(self, x, gamma, beta):
        x = F.relu(self.input_proj(torch.cat([x, coord_map(x.size(0), x.size(2), x.size(3))], 1)))
        out = self.bn(self.conv(x))
        out = gamma.view(x.size(0), -1, 1, 1) * out + beta.view(x.size(0), -1, 1, 1)
        return x + F.relu(out)


class FiLMNet(nn.Module):
    def __init__(self, vocab=8, embed=6, hidden=10, channels=6, blocks=2, classes=3):
        super().__init__()
        self.blocks_n, self.channels = blocks, channels
        self.embedding = nn.Embedding(vocab, embed, padding_idx=0)
        self.rnn = nn.GRU(embed, hidden, batch_first=True)
        self.film = nn.Linear(hidden, blocks * 2 * channels)
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1), nn.ReLU())
        self.blocks = nn.ModuleList(FiLMedBlock(channels) for _ in range(blocks))
        self.classifier = nn.Sequential(nn.Linear(channels, 8), nn.ReLU(), nn.Linear(8, classes))

    def forward(self, image, question, lengths):
        packed = pack_padded_sequence(
            self.embedding(question), lengths, batch_first=True, enforce_sorted=False
        )
        _, h = self.rnn(packed)
        film = self.film(h[-1]).view(-1, self.blocks_n, 2, self.channels)
        x = self.stem(image)
        for i, block in enumerate(self.blocks):
            gamma, beta = film[:, i].unbind(1)
            x = block(x, 1 + gamma, beta)
        return self.classifier(x.amax(dim=(2, 3)))


def make_data(n, vocab=8):
    images = torch.rand(n, 3, 6, 6)
    lengths = torch.randint(2, 6, (n,))
    questions = torch.randint(1, vocab, (n, 5))
    questions[torch.arange(5)[None, :] >= lengths[:, None]] = 0
    asked = questions[:, 0] % 3
    answers = (images[torch.arange(n), asked].mean(dim=(1, 2)) * 6).long() % 3
    return images, questions, lengths, answers


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:4].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:4].tolist() + [p.grad.norm().item()]
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
    model = FiLMNet()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-5)
    out = []
    for _ in range(args.steps):
        images, questions, lengths, answers = make_data(6)
        logits = model(images, questions, lengths)
        loss = F.cross_entropy(logits, answers, label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        accuracy = (logits.argmax(1) == answers).float().mean().item()
        out += [loss.item(), norm.item(), accuracy] + values(model)
        out += model.blocks[0].bn.running_mean.tolist() + model.blocks[1].bn.running_var.tolist()
    model.eval()
    with torch.no_grad():
        logits = model(images, questions, lengths)
    return out + logits.flatten().tolist()


if __name__ == "__main__":
    main()
