"""Semi-supervised FixMatch with an exponential-moving-average teacher (after kekmodel/
FixMatch-pytorch's ``train.py`` and its ``ModelEMA``), on a few labelled and many unlabelled
synthetic images, in float64.

Weak augmentation: a random horizontal ``torch.flip`` chosen by ``rand`` per sample and a
small ``torch.roll`` shift; strong augmentation: additive noise and a cutout square written
with index assignment. The labelled, weak and strong batches go through the network in one
``torch.cat`` forward (``interleave``/``de_interleave`` by ``reshape``/``transpose`` so that
BatchNorm sees mixed batches), ``chunk`` splits the logits; pseudo-labels from
``torch.softmax(logits_u_w.detach() / T, dim=-1)`` and ``torch.max``, the confidence mask by
``ge(threshold).float()``, the unlabelled loss ``(F.cross_entropy(..., reduction="none") *
mask).mean()``. SGD(nesterov) without weight decay on biases and BatchNorm weights (two
parameter groups chosen by name), a cosine ``LambdaLR``, and ``ModelEMA``: a ``deepcopy``
updated under ``no_grad`` through ``state_dict()`` (``mul_``/``add_`` on float entries,
``copy_`` of the rest). Returns the losses, mask rates, learning rates and the EMA model's
outputs.
"""

from __future__ import annotations

import argparse
import math
from copy import deepcopy

import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallNet(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 3, padding=1, bias=False),
            nn.BatchNorm2d(6, momentum=0.01),
            nn.LeakyReLU(0.1, inplace=True),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.fc = nn.Linear(6, classes)

    def forward(self, x):
        return self.fc(self.features(x))


class ModelEMA:
    def __init__(self, model, decay):
        self.ema = deepcopy(model)
        self.ema.eval()
        self.decay = decay
        self.param_keys = [k for k, _ in self.ema.named_parameters()]
        self.buffer_keys = [k for k, _ in self.ema.named_buffers()]
        for p in self.ema.parameters():
            p.requires_grad_(False)

    def update(self, model):
        with torch.no_grad():
            msd = model.state_dict()
            esd = self.ema.state_dict()
            for k in self.param_keys:
                model_v = msd[k].detach()
                ema_v = esd[k]
                esd[k].copy_(ema_v * self.decay + (1.0 - self.decay) * model_v)
            for k in self.buffer_keys:
                esd[k].copy_(msd[k])


def interleave(x, size):
    s = list(x.shape)
    return x.reshape([-1, size] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])


def de_interleave(x, size):
    s = list(x.shape)
    return x.reshape([size, -1] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])


def get_cosine_schedule_with_warmup(optimizer, warmup, total, num_cycles=7.0 / 16.0):
    def _lr_lambda(current_step):
        if current_step < warmup:
            return float(current_step) / float(max(1, warmup))
        progress = float(current_step - warmup) / float(max(1, total - warmup))
        return max(0.0, math.cos(math.pi * num_cycles * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_lambda)


def weak(x):
    flip = torch.rand(x.size(0)) < 0.5
    x = torch.where(flip.view(-1, 1, 1, 1), x.flip(-1), x)
    return torch.roll(x, shifts=1, dims=2)


def strong(x):
    x = weak(x) + 0.3 * torch.randn(x.shape)
    x = x.clone()
    for i in range(x.size(0)):
        r, c = torch.randint(0, 5, (2,)).tolist()
        x[i, :, r : r + 3, c : c + 3] = 0.5
    return x


def images(templates, labels):
    return templates[labels] + 0.2 * torch.randn(labels.size(0), 1, 8, 8)


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
    model = SmallNet()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    no_decay = ["bias", "bn"]
    grouped_parameters = [
        {"params": [p for n, p in model.named_parameters()
                    if not any(nd in n for nd in no_decay) and p.dim() > 1],
         "weight_decay": 5e-4},
        {"params": [p for n, p in model.named_parameters()
                    if any(nd in n for nd in no_decay) or p.dim() == 1],
         "weight_decay": 0.0},
    ]  # fmt: skip
    optimizer = torch.optim.SGD(grouped_parameters, lr=0.03, momentum=0.9, nesterov=True)
    scheduler = get_cosine_schedule_with_warmup(optimizer, 1, args.steps)
    ema = ModelEMA(model, 0.9)
    templates = torch.randn(3, 1, 8, 8)
    mu, batch, threshold = 2, 3, 0.37
    out = []
    for _ in range(args.steps):
        model.train()
        targets_x = torch.randint(0, 3, (batch,))
        inputs_x = images(templates, targets_x)
        unlabeled = images(templates, torch.randint(0, 3, (batch * mu,)))
        inputs = interleave(torch.cat((inputs_x, weak(unlabeled), strong(unlabeled))), 2 * mu + 1)
        logits = de_interleave(model(inputs), 2 * mu + 1)
        logits_x = logits[:batch]
        logits_u_w, logits_u_s = logits[batch:].chunk(2)
        Lx = F.cross_entropy(logits_x, targets_x, reduction="mean")
        pseudo_label = torch.softmax(logits_u_w.detach() / 1.0, dim=-1)
        max_probs, targets_u = torch.max(pseudo_label, dim=-1)
        mask = max_probs.ge(threshold).float()
        Lu = (F.cross_entropy(logits_u_s, targets_u, reduction="none") * mask).mean()
        loss = Lx + 1.0 * Lu
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        ema.update(model)
        out += [loss.item(), Lx.item(), Lu.item(), mask.mean().item(), scheduler.get_last_lr()[0]]
    with torch.no_grad():
        test = images(templates, torch.arange(3))
        out += ema.ema(test).flatten().tolist() + model(test).flatten().tolist()
    out += ema.ema.features[1].running_mean.tolist()
    return out
