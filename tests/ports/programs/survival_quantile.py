"""Survival analysis and quantile regression on tabular data (after pycox's / DeepSurv's Cox
partial likelihood and the pinball-loss recipes for prediction intervals), in float64.

Features binned by ``torch.bucketize`` on ``torch.quantile`` edges and one-hot embedded;
robust scaling by ``torch.nanmedian``/``nanquantile`` over columns with NaNs filled by
``torch.where(isnan, ...)``; ``torch.std_mean``/``var_mean``/``aminmax`` statistics. DeepSurv:
the Cox negative log partial likelihood by ``argsort(descending=True, stable=True)`` of the
times (tied times keep their order) and ``torch.logcumsumexp`` of the risks, Breslow-style;
the concordance index by broadcast comparisons; a Kaplan-Meier curve by
``torch.unique(return_counts)``, ``cumprod`` and ``searchsorted`` for the survival at given
times, its area by ``torch.trapezoid`` over ``torch.diff``-checked times. Quantile
regression: three heads trained by the pinball loss, crossing removed by ``torch.cummax``
over the quantiles, coverage of the interval; ``torch.histc`` of the residuals and
``torch.median(dim)`` of them. Adam and Adagrad.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

QUANTILES = (0.1, 0.5, 0.9)


class Net(nn.Module):
    def __init__(self, d_in, bins, d_out):
        super().__init__()
        self.bin_embed = nn.Embedding(bins, 3)
        self.body = nn.Sequential(nn.Linear(d_in + 3, 12), nn.SELU(), nn.Linear(12, d_out))

    def forward(self, x, binned):
        return self.body(torch.cat([x, self.bin_embed(binned)], dim=1))


def cox_loss(risk, time, event):
    order = torch.argsort(time, descending=True, stable=True)
    risk, event = risk[order], event[order]
    log_cum = torch.logcumsumexp(risk, dim=0)
    return -((risk - log_cum) * event).sum() / event.sum()


def concordance(risk, time, event):
    earlier = (time[:, None] < time[None, :]) & event[:, None].bool()
    right = (risk[:, None] > risk[None, :]).double() + 0.5 * (risk[:, None] == risk[None, :])
    return (right * earlier).sum() / earlier.sum()


def kaplan_meier(time, event, at):
    times, counts = torch.unique(time, return_counts=True)
    deaths = torch.zeros_like(times).index_add_(0, torch.searchsorted(times, time), event)
    at_risk = counts.flip(0).cumsum(0).flip(0).double()
    surv = torch.cumprod(1 - deaths / at_risk, dim=0)
    idx = torch.searchsorted(times, at, right=True) - 1
    curve = torch.where(idx >= 0, surv[idx.clamp(min=0)], torch.ones_like(at))
    assert (torch.diff(times) > 0).all()
    return curve, torch.trapezoid(surv, times)


def pinball(pred, y, qs):
    diff = y[:, None] - pred
    return torch.maximum(qs * diff, (qs - 1) * diff).mean()


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
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
    n, d, bins = 40, 4, 4
    models = {"cox": Net(d, bins, 1), "quantile": Net(d, bins, len(QUANTILES))}
    if args.init:
        state = torch.load(args.init)
        for k, m in models.items():
            m.load_state_dict(state[k])
    if args.save_init:
        torch.save({k: m.state_dict() for k, m in models.items()}, args.save_init)
    raw = torch.randn(n, d)
    raw[torch.tensor([3, 7, 11]), torch.tensor([0, 2, 2])] = float("nan")
    out = []
    med = torch.nanmedian(raw, dim=0).values
    iqr = torch.nanquantile(raw, 0.75, dim=0) - torch.nanquantile(raw, 0.25, dim=0)
    x = torch.where(torch.isnan(raw), med, raw)
    x = (x - med) / iqr
    std, mean = torch.std_mean(x, dim=0)
    var, _ = torch.var_mean(x, dim=0, correction=0)
    lo, hi = torch.aminmax(x, dim=0)
    out += std.tolist() + mean.tolist() + var.tolist() + lo.tolist() + hi.tolist()
    out += [float(torch.nanmean(raw).item()), med.sum().item(), iqr.sum().item()]
    edges = torch.quantile(x[:, 0], torch.tensor([0.25, 0.5, 0.75]), interpolation="linear")
    binned = torch.bucketize(x[:, 0].contiguous(), edges)
    out += edges.tolist() + torch.bincount(binned, minlength=bins).double().tolist()

    hazard = x[:, 1] - 0.5 * x[:, 2]
    time = torch.round(torch.exp(-hazard + 0.3 * torch.randn(n)) * 10) / 10 + 0.1
    event = (torch.rand(n) < 0.7).double()
    model = models["cox"]
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(args.steps):
        opt.zero_grad()
        risk = model(x, binned).squeeze(1)
        loss = cox_loss(risk, time, event)
        loss.backward()
        opt.step()
        out += [loss.item(), concordance(risk.detach(), time, event).item()]
    curve, area = kaplan_meier(time, event, torch.tensor([0.0, 0.5, 1.0, 2.0, 50.0]))
    out += curve.tolist() + [area.item()]

    y = x[:, 0] * 2 + x[:, 3] + 0.5 * torch.randn(n)
    qs = torch.tensor(QUANTILES)
    model = models["quantile"]
    opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    for _ in range(args.steps):
        opt.zero_grad()
        pred = model(x, binned)
        loss = pinball(pred, y, qs)
        loss.backward()
        opt.step()
        out.append(loss.item())
    with torch.no_grad():
        pred = torch.cummax(model(x, binned), dim=1).values
        cover = ((y >= pred[:, 0]) & (y <= pred[:, 2])).double().mean()
        resid = y - pred[:, 1]
        hist = torch.histc(resid, bins=5, min=-3.0, max=3.0)
        median = torch.median(resid.view(4, 10), dim=1)
    out += [cover.item()] + hist.tolist() + median.values.tolist()
    out += median.indices.double().tolist() + pred[:3].flatten().tolist()
    out += F.one_hot(binned[:4], bins).double().flatten().tolist()
    return out


if __name__ == "__main__":
    main()
