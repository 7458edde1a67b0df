"""A 1-D and 2-D Fourier Neural Operator (after neuraloperator's ``SpectralConv`` and the
original ``fourier_1d.py``/``fourier_2d.py`` scripts), on synthetic PDE-like data, in float64.

The spectral layer: ``torch.fft.rfft``/``rfft2`` with ``norm="ortho"``, complex weights
as ``nn.Parameter(scale * torch.rand(..., dtype=torch.cfloat))`` (here ``cdouble``), the
product ``torch.einsum("bix,iox->box", ...)`` on the kept low modes written into a zero
``torch.zeros(..., dtype=torch.cdouble)`` buffer by slice assignment (both corners of the 2-D
spectrum), ``irfft``/``irfft2`` with ``n=``/``s=``; a 1x1 ``Conv1d``/``Conv2d`` bypass,
``F.gelu``, a positional grid ``torch.linspace`` ``repeat``-ed and ``cat``-ed as channels,
``permute`` between channels-last lifting and channels-first layers. The loss is the
relative L2 loss (``torch.norm(x - y, 2, 1) / torch.norm(y, 2, 1)``); Adam with
``weight_decay`` and ``StepLR``; a complex parameter's gradient seen through
``torch.view_as_real``. Returns every loss and every parameter's and gradient's values
(complex ones as real pairs).
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class SpectralConv1d(nn.Module):
    def __init__(self, cin, cout, modes):
        super().__init__()
        self.modes = modes
        scale = 1 / (cin * cout)
        self.weights = nn.Parameter(scale * torch.rand(cin, cout, modes, dtype=torch.cdouble))

    def forward(self, x):
        x_ft = torch.fft.rfft(x, norm="ortho")
        out_ft = torch.zeros(x.shape[0], self.weights.shape[1], x.shape[-1] // 2 + 1,
                             dtype=torch.cdouble)  # fmt: skip
        out_ft[:, :, : self.modes] = torch.einsum(
            "bix,iox->box", x_ft[:, :, : self.modes], self.weights
        )
        return torch.fft.irfft(out_ft, n=x.shape[-1], norm="ortho")


class SpectralConv2d(nn.Module):
    def __init__(self, cin, cout, m1, m2):
        super().__init__()
        self.m1, self.m2 = m1, m2
        scale = 1 / (cin * cout)
        self.w1 = nn.Parameter(scale * torch.rand(cin, cout, m1, m2, dtype=torch.cdouble))
        self.w2 = nn.Parameter(scale * torch.rand(cin, cout, m1, m2, dtype=torch.cdouble))

    def forward(self, x):
        b, _, h, w = x.shape
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(b, self.w1.shape[1], h, w // 2 + 1, dtype=torch.cdouble)
        out_ft[:, :, : self.m1, : self.m2] = torch.einsum(
            "bixy,ioxy->boxy", x_ft[:, :, : self.m1, : self.m2], self.w1
        )
        out_ft[:, :, -self.m1 :, : self.m2] = torch.einsum(
            "bixy,ioxy->boxy", x_ft[:, :, -self.m1 :, : self.m2], self.w2
        )
        return torch.fft.irfft2(out_ft, s=(h, w))


class FNO1d(nn.Module):
    def __init__(self, modes=4, width=6):
        super().__init__()
        self.fc0 = nn.Linear(2, width)
        self.spectral = nn.ModuleList([SpectralConv1d(width, width, modes) for _ in range(2)])
        self.bypass = nn.ModuleList([nn.Conv1d(width, width, 1) for _ in range(2)])
        self.fc1 = nn.Linear(width, 8)
        self.fc2 = nn.Linear(8, 1)

    def forward(self, x):
        grid = torch.linspace(0, 1, x.shape[1]).reshape(1, -1, 1).repeat(x.shape[0], 1, 1)
        x = self.fc0(torch.cat((x, grid), dim=-1)).permute(0, 2, 1)
        for i, (spec, w) in enumerate(zip(self.spectral, self.bypass)):
            x = spec(x) + w(x)
            if i < len(self.spectral) - 1:
                x = F.gelu(x)
        x = x.permute(0, 2, 1)
        return self.fc2(F.gelu(self.fc1(x)))


class FNO2d(nn.Module):
    def __init__(self, modes=2, width=4):
        super().__init__()
        self.fc0 = nn.Linear(3, width)
        self.spectral = SpectralConv2d(width, width, modes, modes)
        self.bypass = nn.Conv2d(width, width, 1)
        self.fc1 = nn.Linear(width, 1)

    def forward(self, x):
        b, h, w, _ = x.shape
        gx = torch.linspace(0, 1, h).reshape(1, h, 1, 1).repeat(b, 1, w, 1)
        gy = torch.linspace(0, 1, w).reshape(1, 1, w, 1).repeat(b, h, 1, 1)
        x = self.fc0(torch.cat((x, gx, gy), dim=-1)).permute(0, 3, 1, 2)
        x = F.gelu(self.spectral(x) + self.bypass(x))
        return self.fc1(x.permute(0, 2, 3, 1))


def relative_l2(x, y):
    b = x.shape[0]
    diff = torch.norm(x.reshape(b, -1) - y.reshape(b, -1), 2, 1)
    return (diff / torch.norm(y.reshape(b, -1), 2, 1)).sum()


def values(model):
    out = []
    for p in model.parameters():
        vals = torch.view_as_real(p.detach()) if p.is_complex() else p.detach()
        out += vals.flatten()[:8].tolist() + [vals.abs().sum().item()]
        if p.grad is not None:
            grad = torch.view_as_real(p.grad) if p.grad.is_complex() else p.grad
            out += grad.flatten()[:8].tolist() + [grad.abs().sum().item()]
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
    m1, m2 = FNO1d(), FNO2d()
    if args.init:
        state = torch.load(args.init)
        m1.load_state_dict(state["fno1d"])
        m2.load_state_dict(state["fno2d"])
    if args.save_init:
        torch.save({"fno1d": m1.state_dict(), "fno2d": m2.state_dict()}, args.save_init)
    params = list(m1.parameters()) + list(m2.parameters())
    optimizer = torch.optim.Adam(params, lr=1e-2, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    out = []
    for _ in range(args.steps):
        a1 = torch.randn(3, 16, 1)
        u1 = torch.cumsum(a1, dim=1) / 4  # an "integrated" target
        a2 = torch.randn(2, 6, 8, 1)
        u2 = a2.roll(1, dims=1) - a2.flip(2) / 2
        loss = relative_l2(m1(a1), u1) + relative_l2(m2(a2), u2)
        optimizer.zero_grad()
        loss.backward()
        out += [loss.item()] + values(m1) + values(m2)
        optimizer.step()
        scheduler.step()
    return out


if __name__ == "__main__":
    main()
