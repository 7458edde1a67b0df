"""A fine-tuning loop in the style of the Hugging Face / timm training scripts written in plain
PyTorch, on a small transformer-ish regressor, in float64.

Parameter groups without weight decay for biases and LayerNorm weights (chosen by name),
AdamW; a linear warm-up then cosine decay as a ``LambdaLR`` (``get_cosine_schedule_with_
warmup``'s formula); gradient accumulation over micro-batches with the loss divided by the
number of steps and ``optimizer.zero_grad(set_to_none=True)`` after each update; a
``torch.amp.GradScaler("cpu")`` with a small ``growth_interval``, ``scaler.unscale_`` before
``clip_grad_norm_``, one micro-batch whose loss is made infinite so that the scaler skips
that update and backs off (``scaler.get_scale()``); an exponential moving average of the
weights by ``torch.optim.swa_utils.AveragedModel(multi_avg_fn=get_ema_multi_avg_fn(...))``
and ``update_parameters``; the learning rates read from ``scheduler.get_last_lr()``.
Returns the losses, the scales, the learning rates, gradients, parameters and the averaged
parameters.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.ff = nn.Sequential(
            nn.Linear(d, 2 * d), nn.GELU(approximate="tanh"), nn.Linear(2 * d, d)
        )

    def forward(self, x):
        return x + self.ff(self.norm(x))


class Regressor(nn.Module):
    def __init__(self, d_in=4, d=6):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.Sequential(Block(d), Block(d))
        self.head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 1))

    def forward(self, x):
        return self.head(self.blocks(self.inp(x))).squeeze(-1)


def cosine_with_warmup(optimizer, warmup, total, cycles=0.5):
    def lr_lambda(step):
        if step < warmup:
            return float(step) / float(max(1, warmup))
        progress = float(step - warmup) / float(max(1, total - warmup))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(cycles) * 2.0 * progress)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


def grouped(model, weight_decay):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if name.endswith("bias") or "norm" in name else decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:3].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:3].tolist() + [p.grad.abs().sum().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--updates", type=int, default=4)
    parser.add_argument("--accumulate", type=int, default=2)
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
    model = Regressor()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    optimizer = torch.optim.AdamW(grouped(model, 0.05), lr=3e-3, betas=(0.9, 0.98), eps=1e-6)
    scheduler = cosine_with_warmup(optimizer, warmup=2, total=args.updates)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8, growth_interval=2)
    out = [
        float(len(optimizer.param_groups[0]["params"])),
        float(len(optimizer.param_groups[1]["params"])),
    ]
    w_true = torch.tensor([0.5, -1.0, 2.0, 0.25])
    micro = 0
    for _ in range(args.updates):
        for _ in range(args.accumulate):
            x = torch.randn(3, 4)
            y = (x @ w_true).sin()
            loss = F.mse_loss(model(x), y) / args.accumulate
            if micro == 3:  # an overflow: the scaler must skip this update
                loss = loss * float("inf")
            scaler.scale(loss).backward()
            out.append(loss.item() if math.isfinite(loss.item()) else -1.0)
            micro += 1
        scaler.unscale_(optimizer)
        norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        finite = math.isfinite(norm.item())
        out += [norm.item()] + values(model) if finite else [-1.0]
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        scheduler.step()
        ema.update_parameters(model)
        out += [scaler.get_scale()] + scheduler.get_last_lr()
        out.append(float(ema.n_averaged.item()))
    for p in ema.module.parameters():
        out += p.detach().flatten()[:3].tolist()
    with torch.no_grad():
        x = torch.linspace(-1, 1, 8).view(2, 4)
        out += model(x).tolist() + ema(x).tolist()
    return out


if __name__ == "__main__":
    main()
