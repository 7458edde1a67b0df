"""A WaveNet on mu-law quantised audio (after r9y9/wavenet_vocoder and vincentherrmann's
pytorch-wavenet, with torchaudio's ``mu_law_encoding``/``mu_law_decoding`` formulas written
out), on synthetic chirps, in float64.

Mu-law companding by ``torch.sign``, ``torch.log1p`` and ``.to(torch.int64)``; one-hot inputs
by ``F.one_hot(...).transpose(1, 2)``; residual blocks of left-``F.pad``-ed dilated
``Conv1d`` (dilations 1, 2, 4, 8) with the gated unit ``tanh * sigmoid`` of a ``chunk``-ed
convolution, 1x1 residual and skip convolutions scaled by ``math.sqrt(0.5)``; the skip sum
through ReLU and two 1x1 convolutions to ``(B, Q, T)`` logits and ``F.cross_entropy`` over
the receptive field's valid outputs. Adam with ``amsgrad``, ``clip_grad_norm_``; then a few
samples drawn autoregressively with ``torch.multinomial`` and decoded. Returns every loss,
gradient, parameter and sample.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def mu_law_encode(x, channels):
    mu = torch.tensor(channels - 1, dtype=x.dtype)
    x_mu = torch.sign(x) * torch.log1p(mu * torch.abs(x)) / torch.log1p(mu)
    return ((x_mu + 1) / 2 * mu + 0.5).to(torch.int64)


def mu_law_decode(x_mu, channels):
    mu = torch.tensor(channels - 1, dtype=torch.get_default_dtype())
    x = (x_mu.to(mu.dtype) / mu) * 2 - 1.0
    return torch.sign(x) * (torch.exp(torch.abs(x) * torch.log1p(mu)) - 1.0) / mu


class ResidualBlock(nn.Module):
    def __init__(self, residual, gate, skip, dilation, kernel_size=2):
        super().__init__()
        self.pad = (kernel_size - 1) * dilation
        self.conv = nn.Conv1d(residual, 2 * gate, kernel_size, dilation=dilation)
        self.res = nn.Conv1d(gate, residual, 1)
        self.skip = nn.Conv1d(gate, skip, 1)

    def forward(self, x):
        a, b = self.conv(F.pad(x, (self.pad, 0))).chunk(2, dim=1)
        h = torch.tanh(a) * torch.sigmoid(b)
        return (x + self.res(h)) * math.sqrt(0.5), self.skip(h)


class WaveNet(nn.Module):
    def __init__(self, channels=16, residual=8, gate=8, skip=8, dilations=(1, 2, 4, 8)):
        super().__init__()
        self.channels = channels
        self.first = nn.Conv1d(channels, residual, 1)
        self.blocks = nn.ModuleList(ResidualBlock(residual, gate, skip, d) for d in dilations)
        self.last = nn.Sequential(
            nn.ReLU(), nn.Conv1d(skip, skip, 1), nn.ReLU(), nn.Conv1d(skip, channels, 1)
        )
        self.receptive_field = sum(dilations) + 1

    def forward(self, q):
        x = self.first(F.one_hot(q, self.channels).transpose(1, 2).to(self.first.weight.dtype))
        skips = 0
        for block in self.blocks:
            x, s = block(x)
            skips = skips + s
        return self.last(skips * math.sqrt(1.0 / len(self.blocks)))


def chirps(batch, length):
    t = torch.arange(length, dtype=torch.get_default_dtype()) / length
    freq = 2 + 4 * torch.rand(batch, 1)
    return 0.8 * torch.sin(2 * math.pi * freq * t * (1 + t)) + 0.05 * torch.randn(batch, length)


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
    model = WaveNet()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, amsgrad=True)
    rf = model.receptive_field
    out = []
    for _ in range(args.steps):
        q = mu_law_encode(chirps(3, 32), model.channels)
        logits = model(q[:, :-1])
        loss = F.cross_entropy(logits[:, :, rf - 1 :], q[:, rf:])
        optimizer.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        out += [loss.item(), norm.item(), q.sum().item()] + values(model)
    model.eval()
    generated = q[:1, :rf]
    with torch.no_grad():
        for _ in range(4):
            probs = F.softmax(model(generated[:, -rf:])[:, :, -1], dim=1)
            generated = torch.cat([generated, torch.multinomial(probs, 1)], dim=1)
    return out + probs.flatten().tolist() + mu_law_decode(generated, model.channels)[0].tolist()


if __name__ == "__main__":
    main()
