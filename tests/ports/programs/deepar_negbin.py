"""A DeepAR-style probabilistic forecaster (Salinas et al.; after the GluonTS/pytorch-forecasting
recipes and the "DeepAR in PyTorch" re-implementations), on synthetic count series, in float64.

An ``nn.LSTM(batch_first=True)`` over the lagged, mean-scaled target (scale ``1 + mean`` of
the context by ``keepdim``) and ``sin``/``cos`` time features built by ``torch.stack`` and
``expand``; a negative-binomial head (``F.softplus`` mean and shape, ``torch.distributions.
NegativeBinomial(total_count=1 / alpha, logits=torch.log(mu * alpha))``) or, with
``--likelihood studentt``, ``StudentT(df=2 + softplus, loc, scale=softplus)`` rescaled by the
series scale; the negative log-likelihood ``-dist.log_prob(target).mean()``; a forecast that
feeds back the predicted mean step by step from the LSTM's last ``(h, c)``. Adam,
``clip_grad_norm_``. Returns every loss, gradient, parameter and forecast.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import NegativeBinomial, StudentT


class DeepAR(nn.Module):
    def __init__(self, hidden=12, likelihood="negbin"):
        super().__init__()
        self.likelihood = likelihood
        self.rnn = nn.LSTM(3, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, 3 if likelihood == "studentt" else 2)

    def distribution(self, out, scale):
        params = self.head(out)
        if self.likelihood == "studentt":
            df = 2 + F.softplus(params[..., 0])
            return StudentT(df, params[..., 1] * scale, F.softplus(params[..., 2]) * scale)
        mu = F.softplus(params[..., 0]) * scale
        alpha = F.softplus(params[..., 1]) / scale.sqrt()
        return NegativeBinomial(total_count=1.0 / alpha, logits=torch.log(mu * alpha))

    def forward(self, lagged, features, scale, state=None):
        inputs = torch.cat([(lagged / scale).unsqueeze(-1), features], dim=-1)
        out, state = self.rnn(inputs, state)
        return self.distribution(out, scale), state


def time_features(start, length, batch):
    t = torch.arange(start, start + length, dtype=torch.get_default_dtype())
    feats = torch.stack([torch.sin(2 * math.pi * t / 7), torch.cos(2 * math.pi * t / 7)], dim=-1)
    return feats.unsqueeze(0).expand(batch, -1, -1)


def counts(batch, length):
    t = torch.arange(length, dtype=torch.get_default_dtype())
    level = 3 + 6 * torch.rand(batch, 1)
    return torch.floor(
        level * (1 + 0.5 * torch.sin(2 * math.pi * t / 7)) + 3 * torch.rand(batch, length)
    )


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
    parser.add_argument("--likelihood", choices=["negbin", "studentt"], default="negbin")
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
    model = DeepAR(likelihood=args.likelihood)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    context, horizon, batch = 10, 4, 4
    out = []
    for _ in range(args.steps):
        series = counts(batch, context + horizon + 1)
        scale = 1 + series[:, :context].mean(dim=1, keepdim=True)
        lagged, target = series[:, :-1], series[:, 1:]
        dist, _ = model(lagged, time_features(1, context + horizon, batch), scale)
        loss = -dist.log_prob(target).mean()
        optimizer.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        optimizer.step()
        out += [loss.item(), norm.item()] + values(model)
    model.eval()
    with torch.no_grad():
        dist, state = model(lagged[:, :context], time_features(1, context, batch), scale)
        last = dist.mean[:, -1:]
        forecast = [last]
        for step in range(horizon - 1):
            dist, state = model(last, time_features(context + 1 + step, 1, batch), scale, state)
            last = dist.mean
            forecast.append(last)
    return out + torch.cat(forecast, dim=1).flatten().tolist() + dist.variance.flatten().tolist()


if __name__ == "__main__":
    main()
