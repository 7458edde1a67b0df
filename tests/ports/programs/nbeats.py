"""N-BEATS for univariate forecasting (after ElementAI/N-BEATS' ``models/nbeats.py`` and
``common/torch/losses.py``), interpretable and generic stacks on synthetic seasonal series with
a trend, in float64.

Blocks of ``Linear``-``ReLU`` layers whose ``theta`` is read through a basis: a generic one
(slices of ``theta``), a polynomial trend (``torch.stack`` of powers of a ``linspace`` grid
held by ``register_buffer``) and a Fourier seasonality (``cos``/``sin`` of ``2 pi i t``),
applied by ``torch.einsum("bp,pt->bt")``; the doubly residual forward over ``x.flip(dims=
(1,))`` with an input mask; sMAPE and MASE losses with ``divide_no_nan`` (``result[result !=
result] = 0.0`` and ``result[result == float("inf")] = 0.0``); Adam, ``clip_grad_norm_``.
Returns every loss, gradient, parameter and forecast.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn


def divide_no_nan(a, b):
    result = a / b
    result[result != result] = 0.0
    result[result == float("inf")] = 0.0
    return result


def smape_loss(forecast, target, mask):
    return 200 * torch.mean(
        divide_no_nan(torch.abs(forecast - target), torch.abs(forecast.data) + torch.abs(target))
        * mask
    )


def mase_loss(insample, freq, forecast, target, mask):
    masep = torch.mean(torch.abs(insample[:, freq:] - insample[:, :-freq]), dim=1)
    masked_masep_inv = divide_no_nan(mask, masep[:, None])
    return torch.mean(torch.abs(target - forecast) * masked_masep_inv)


class GenericBasis(nn.Module):
    def __init__(self, backcast_size, forecast_size):
        super().__init__()
        self.backcast_size, self.forecast_size = backcast_size, forecast_size

    def forward(self, theta):
        return theta[:, : self.backcast_size], theta[:, -self.forecast_size :]


class TrendBasis(nn.Module):
    def __init__(self, degree, backcast_size, forecast_size):
        super().__init__()
        n = degree + 1
        back = torch.linspace(0, 1, backcast_size)
        fore = torch.linspace(0, 1, forecast_size)
        self.register_buffer("backcast_time", torch.stack([back**i for i in range(n)]))
        self.register_buffer("forecast_time", torch.stack([fore**i for i in range(n)]))
        self.n = n

    def forward(self, theta):
        backcast = torch.einsum("bp,pt->bt", theta[:, self.n :], self.backcast_time)
        forecast = torch.einsum("bp,pt->bt", theta[:, : self.n], self.forecast_time)
        return backcast, forecast


class SeasonalityBasis(nn.Module):
    def __init__(self, harmonics, backcast_size, forecast_size):
        super().__init__()
        freq = torch.arange(1, harmonics + 1, dtype=torch.get_default_dtype())[:, None]
        back = 2 * math.pi * freq * torch.arange(backcast_size) / backcast_size
        fore = 2 * math.pi * freq * torch.arange(forecast_size) / backcast_size
        self.register_buffer("backcast", torch.cat([torch.cos(back), torch.sin(back)]))
        self.register_buffer("forecast", torch.cat([torch.cos(fore), torch.sin(fore)]))
        self.half = 2 * harmonics

    def forward(self, theta):
        backcast = torch.einsum("bp,pt->bt", theta[:, self.half :], self.backcast)
        forecast = torch.einsum("bp,pt->bt", theta[:, : self.half], self.forecast)
        return backcast, forecast


class Block(nn.Module):
    def __init__(self, input_size, theta_size, basis, layers=2, size=16):
        super().__init__()
        self.layers = nn.ModuleList(
            [nn.Linear(input_size, size)] + [nn.Linear(size, size) for _ in range(layers - 1)]
        )
        self.basis_parameters = nn.Linear(size, theta_size)
        self.basis_function = basis

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return self.basis_function(self.basis_parameters(x))


class NBeats(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = blocks

    def forward(self, x, input_mask):
        residuals = x.flip(dims=(1,))
        input_mask = input_mask.flip(dims=(1,))
        forecast = x[:, -1:]
        for block in self.blocks:
            backcast, block_forecast = block(residuals)
            residuals = (residuals - backcast) * input_mask
            forecast = forecast + block_forecast
        return forecast


def build(kind, back, fore):
    if kind == "generic":
        return NBeats(
            nn.ModuleList(Block(back, back + fore, GenericBasis(back, fore)) for _ in "ab")
        )
    trend = Block(back, 2 * 3, TrendBasis(2, back, fore))
    season = Block(back, 4 * 2, SeasonalityBasis(2, back, fore))
    return NBeats(nn.ModuleList([trend, season]))


def series(batch, length):
    t = torch.arange(length, dtype=torch.get_default_dtype())
    level = 10 + 5 * torch.rand(batch, 1)
    season = torch.sin(2 * math.pi * t / 6 + torch.rand(batch, 1) * 6)
    return level + 0.1 * t * torch.rand(batch, 1) + 2 * season + 0.2 * torch.randn(batch, length)


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
    parser.add_argument("--kind", choices=["generic", "interpretable"], default="interpretable")
    parser.add_argument("--loss", choices=["smape", "mase"], default="smape")
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
    back, fore = 12, 4
    model = build(args.kind, back, fore)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    out = []
    for _ in range(args.steps):
        data = series(6, back + fore)
        data[0, :3] = 0.0  # a series that starts late: masked out of the residuals
        data[1, :back] = 5.0  # a flat history: MASE's scale is 0, its weight inf -> 0
        x, y = data[:, :back], data[:, back:]
        x_mask = (x != 0).to(x.dtype)
        forecast = model(x, x_mask)
        if args.loss == "smape":
            loss = smape_loss(forecast, y, torch.ones_like(y))
        else:
            loss = mase_loss(x, 6, forecast, y, torch.ones_like(y))
        optimizer.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        out += [loss.item(), norm.item()] + values(model)
    with torch.no_grad():
        forecast = model(x, x_mask)
    return out + forecast.flatten().tolist()


if __name__ == "__main__":
    main()
