"""Reptile meta-learning on sine regression (after OpenAI's ``reptile-sinewaves-demo`` as its
PyTorch ports write it), in float64.

An MLP meta-trained by: a task drawn from ``torch.rand`` (amplitude and phase); inner SGD
steps on ``torch.randperm`` minibatches written by hand (``model.zero_grad()``,
``param.data -= lr * param.grad.data``); the outer update by interpolating state dicts,
``weights_before = deepcopy(model.state_dict())`` and ``model.load_state_dict({name:
weights_before[name] + (weights_after[name] - weights_before[name]) * outer_lr ...})`` with a
linearly annealed ``outer_lr``; and evaluation by fine-tuning a ``copy.deepcopy`` of the model
on a few points of a held-out task, with ``torch.optim.SGD``. Returns every loss, gradient,
parameter and prediction.
"""

from __future__ import annotations

import argparse
import copy
import math

import torch
import torch.nn as nn


def make_model():
    return nn.Sequential(
        nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1)
    )


def task():
    phase = torch.rand(()) * 2 * math.pi
    amplitude = torch.rand(()) * 4.9 + 0.1
    return lambda x: torch.sin(x + phase) * amplitude


def train_on_batch(model, x, y, lr):
    model.zero_grad()
    loss = (model(x) - y).pow(2).mean()
    loss.backward()
    for param in model.parameters():
        param.data -= lr * param.grad.data
    return loss


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:5].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:5].tolist() + [p.grad.norm().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=3)
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
    model = make_model()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    x_all = torch.linspace(-5, 5, 20)[:, None]
    inner_lr, inner_epochs, batch, outer_lr0 = 0.02, 2, 5, 0.1
    out = []
    for iteration in range(args.iterations):
        weights_before = copy.deepcopy(model.state_dict())
        f = task()
        y_all = f(x_all)
        for _ in range(inner_epochs):
            order = torch.randperm(len(x_all))
            for start in range(0, len(x_all), batch):
                idx = order[start : start + batch]
                out.append(train_on_batch(model, x_all[idx], y_all[idx], inner_lr).item())
        outer_lr = outer_lr0 * (1 - iteration / args.iterations)
        weights_after = model.state_dict()
        model.load_state_dict(
            {
                name: weights_before[name] + (weights_after[name] - weights_before[name]) * outer_lr
                for name in weights_before
            }
        )
        out += values(model)
    f = task()
    points = torch.randperm(len(x_all))[:5]
    tuned = copy.deepcopy(model)
    optimizer = torch.optim.SGD(tuned.parameters(), lr=inner_lr)
    for _ in range(4):
        loss = (tuned(x_all[points]) - f(x_all[points])).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out.append(loss.item())
    with torch.no_grad():
        prediction = tuned(x_all).squeeze(1)
    out += values(tuned) + [(prediction - f(x_all).squeeze(1)).pow(2).mean().item()]
    return out + values(model) + prediction.tolist()


if __name__ == "__main__":
    main()
