"""Domain-adversarial training with a gradient reversal layer (DANN, Ganin & Lempitsky; after
fungtion/DANN's ``functions.py`` and ``main.py``), on a synthetic source/target shift, in
float64.

``ReverseLayerF``: a ``torch.autograd.Function`` whose forward is ``x.view_as(x)`` with the
coefficient on ``ctx``, and whose backward returns ``grad_output.neg() * ctx.alpha, None``. A
feature extractor (Conv1d, BatchNorm1d, ReLU, MaxPool1d, Dropout) feeds a label classifier and,
through the reversal, a domain classifier; ``alpha = 2 / (1 + exp(-10 p)) - 1`` grows with
progress ``p`` (``--grl hook``: the reversal as a ``register_hook`` returning ``-alpha * grad``
on a ``view_as`` of the features instead); SGD with momentum and two parameter groups (the
heads at a larger learning rate), its ``lr`` annealed by writing ``param_group["lr"]``; label
NLLLoss on ``LogSoftmax`` outputs, domain ``BCEWithLogitsLoss`` on both domains. Then
``eval()`` accuracy on the target domain. Returns the losses and accuracies.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn


class ReverseLayerF(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.alpha, None


def reverse_by_hook(x, alpha):
    y = x.view_as(x)
    if y.requires_grad:
        y.register_hook(lambda grad: -alpha * grad)
    return y


class DANN(nn.Module):
    def __init__(self, channels=2, classes=3, grl="function"):
        super().__init__()
        self.reverse = ReverseLayerF.apply if grl == "function" else reverse_by_hook
        self.feature = nn.Sequential(
            nn.Conv1d(channels, 6, kernel_size=3, padding=1),
            nn.BatchNorm1d(6),
            nn.ReLU(True),
            nn.MaxPool1d(2),
            nn.Dropout(0.2),
            nn.Flatten(),
        )
        self.class_classifier = nn.Sequential()
        self.class_classifier.add_module("c_fc1", nn.Linear(6 * 4, 10))
        self.class_classifier.add_module("c_relu1", nn.ReLU(True))
        self.class_classifier.add_module("c_fc2", nn.Linear(10, classes))
        self.class_classifier.add_module("c_softmax", nn.LogSoftmax(dim=1))
        self.domain_classifier = nn.Sequential(nn.Linear(6 * 4, 8), nn.ReLU(True), nn.Linear(8, 1))

    def forward(self, x, alpha):
        feature = self.feature(x)
        reverse = self.reverse(feature, alpha)
        return self.class_classifier(feature), self.domain_classifier(reverse).squeeze(1)


def domain_data(rng, count, shift):
    labels = rng.integers(0, 3, size=count)
    t = np.linspace(0.0, 1.0, 8)
    signal = np.sin(2 * np.pi * (labels[:, None] + 1) * t)
    x = np.stack([signal, np.cos(3 * t) * labels[:, None]], axis=1)
    x = x + shift + 0.3 * rng.standard_normal(x.shape)
    return torch.from_numpy(x), torch.from_numpy(labels)


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--grl", choices=["function", "hook"], default="function")
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
    rng = np.random.default_rng(0)
    source_x, source_y = domain_data(rng, 24, 0.0)
    target_x, target_y = domain_data(rng, 24, 0.7)
    model = DANN(grl=args.grl)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    heads = list(model.class_classifier.parameters()) + list(model.domain_classifier.parameters())
    optimizer = torch.optim.SGD(
        [{"params": model.feature.parameters()}, {"params": heads, "lr": 0.02}],
        lr=0.01,
        momentum=0.9,
    )
    loss_class, loss_domain = nn.NLLLoss(), nn.BCEWithLogitsLoss()
    out = []
    for step in range(args.steps):
        p = step / args.steps
        alpha = 2.0 / (1.0 + np.exp(-10 * p)) - 1
        for group, base in zip(optimizer.param_groups, (0.01, 0.02)):
            group["lr"] = base / (1.0 + 10 * p) ** 0.75
        model.train()
        idx = torch.randperm(24)[:8]
        class_out, domain_s = model(source_x[idx], alpha)
        _, domain_t = model(target_x[idx], alpha)
        err_label = loss_class(class_out, source_y[idx])
        err_domain = loss_domain(domain_s, torch.zeros(8)) + loss_domain(domain_t, torch.ones(8))
        loss = err_label + err_domain
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out += [err_label.item(), err_domain.item(), float(alpha)]
        out += [model.feature[0].weight.grad.abs().sum().item()]
    model.eval()
    with torch.no_grad():
        for x, y in ((source_x, source_y), (target_x, target_y)):
            pred = model(x, 0.0)[0].data.max(1, keepdim=True)[1]
            out.append(pred.eq(y.data.view_as(pred)).sum().item() / len(y))
    out += model.feature[1].running_mean.tolist()
    return out
