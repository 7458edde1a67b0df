"""Stochastic Weight Averaging, after the PyTorch blog post "PyTorch 1.6 now includes
Stochastic Weight Averaging" and the ``torch.optim.swa_utils`` documentation, on a small CNN
with BatchNorm and synthetic images.

``AveragedModel`` (equal averaging, or an EMA through ``get_ema_multi_avg_fn``), a
``CosineAnnealingLR`` before ``swa_start`` and ``SWALR`` (cosine annealing to ``swa_lr``)
after it, ``update_bn`` over the loader (BatchNorm with cumulative averages), and the
averaged model's predictions; SGD with momentum and nesterov.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
        )  # fmt: skip
        self.classifier = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def synthetic_images(rng, count, colours):
    """Noisy 8x8 images of the classes' colours, and their labels."""
    y = rng.integers(0, len(colours), count)
    x = colours[y] + rng.standard_normal((count, 3, 8, 8))
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        preds = model(x)
        loss = F.cross_entropy(preds, y).item()
        correct = (preds.argmax(1) == y).sum().item()
    return [loss, float(correct)]


def main(argv: list[str] | None = None) -> list[float]:
    """Train with SWA; return each batch's loss and each epoch's learning rate, then the
    test loss and accuracy of the model and of its average (before and after update_bn)."""
    parser = argparse.ArgumentParser(description="SWA on synthetic images")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--swa-start", type=int, default=2)
    parser.add_argument("--swa-lr", type=float, default=0.05)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--average", choices=["swa", "ema"], default="swa")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    colours = rng.standard_normal((5, 3, 1, 1))
    x_train, y_train = synthetic_images(rng, 64, colours)
    x_test, y_test = synthetic_images(rng, 32, colours)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True)

    model = Net()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=args.lr, momentum=0.9, nesterov=True, weight_decay=5e-4
    )
    loss_fn = nn.CrossEntropyLoss()
    if args.average == "ema":
        swa_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    else:
        swa_model = AveragedModel(model)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    swa_scheduler = SWALR(optimizer, swa_lr=args.swa_lr, anneal_epochs=2, anneal_strategy="cos")

    out: list[float] = []
    for epoch in range(args.epochs):
        model.train()
        for input, target in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(input), target)
            loss.backward()
            optimizer.step()
            out.append(loss.item())
        if epoch > args.swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
        else:
            scheduler.step()
        out.append(optimizer.param_groups[0]["lr"])
    out += evaluate(model, x_test, y_test)
    out += evaluate(swa_model, x_test, y_test)
    out.append(float(swa_model.n_averaged))
    # Update bn statistics for the swa_model at the end
    update_bn(loader, swa_model)
    # Use swa_model to make predictions on test data
    out += evaluate(swa_model, x_test, y_test)
    bn = swa_model.module.features[1]
    out += bn.running_mean.tolist() + bn.running_var.tolist()
    return out


if __name__ == "__main__":
    main()
