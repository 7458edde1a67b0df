"""Mixup and CutMix data augmentation, after facebookresearch/mixup-cifar10's ``train.py``
(``mixup_data`` / ``mixup_criterion``) and clovaai/CutMix-PyTorch's ``rand_bbox``, on a small
CNN with synthetic images, in float64.

The mixing coefficient drawn by ``np.random.beta`` from a seeded NumPy generator, as those
scripts do; partners by ``torch.randperm``; mixup as ``lam * x + (1 - lam) * x[index, :]``;
CutMix's box from ``np.sqrt(1 - lam)`` and ``np.clip`` written into the batch by sliced
assignment from the permuted batch, ``lam`` re-computed from the box area; the two-target
criterion ``lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)`` with a
label-smoothed ``nn.CrossEntropyLoss``; soft-target cross entropy ``-(targets *
log_softmax).sum(1).mean()`` with one-hot targets by ``F.one_hot`` mixed the same way;
``torch.roll`` for a shift augmentation, ``torch.flip`` for horizontal flips chosen by a
``torch.rand`` mask with ``torch.where``. SGD with Nesterov momentum and a ``MultiStepLR``.
Returns the losses, the mixing coefficients, gradients and parameters.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 8, 3, stride=2, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.conv2(x))
        return self.fc(torch.flatten(self.pool(x), 1))


def mixup_data(x, y, lam):
    index = torch.randperm(x.size(0))
    mixed_x = lam * x + (1 - lam) * x[index, :]
    return mixed_x, y, y[index], index


def rand_bbox(size, lam, rng):
    W, H = size[2], size[3]
    cut_rat = np.sqrt(1.0 - lam)
    cut_w, cut_h = int(W * cut_rat), int(H * cut_rat)
    cx, cy = rng.integers(W), rng.integers(H)
    bbx1 = np.clip(cx - cut_w // 2, 0, W)
    bby1 = np.clip(cy - cut_h // 2, 0, H)
    bbx2 = np.clip(cx + cut_w // 2, 0, W)
    bby2 = np.clip(cy + cut_h // 2, 0, H)
    return bbx1, bby1, bbx2, bby2


def mixup_criterion(criterion, pred, y_a, y_b, lam):
    return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:3].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:3].tolist() + [p.grad.abs().sum().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
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
    rng = np.random.default_rng(3)
    model = Net()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4
    )
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2, 3], gamma=0.5)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.05)
    out = []
    for step in range(args.steps):
        x = torch.rand(6, 3, 8, 8)
        y = torch.randint(0, 4, (6,))
        x[:, y % 3] += 0.5  # a class-dependent colour
        flip = torch.rand(6) < 0.5
        x = torch.where(flip[:, None, None, None], torch.flip(x, dims=[3]), x)
        x = torch.roll(x, shifts=(1, -1), dims=(2, 3))
        lam = float(rng.beta(1.0, 1.0))
        model.train()
        optimizer.zero_grad()
        if step % 2 == 0:
            mixed, y_a, y_b, _ = mixup_data(x, y, lam)
            loss = mixup_criterion(criterion, model(mixed), y_a, y_b, lam)
        else:
            index = torch.randperm(x.size(0))
            bbx1, bby1, bbx2, bby2 = rand_bbox(x.size(), lam, rng)
            x[:, :, bbx1:bbx2, bby1:bby2] = x[index, :, bbx1:bbx2, bby1:bby2]
            lam = 1 - ((bbx2 - bbx1) * (bby2 - bby1) / (x.size(-1) * x.size(-2)))
            pred = model(x)
            targets = lam * F.one_hot(y, 4).double() + (1 - lam) * F.one_hot(y[index], 4).double()
            soft = -(targets * F.log_softmax(pred, dim=1)).sum(1).mean()
            loss = 0.5 * soft + 0.5 * mixup_criterion(criterion, pred, y, y[index], lam)
        loss.backward()
        optimizer.step()
        scheduler.step()
        out += [loss.item(), float(lam)] + scheduler.get_last_lr() + values(model)
    model.eval()
    with torch.no_grad():
        out += model(x).flatten().tolist() + model.bn1.running_var.tolist()
    return out


if __name__ == "__main__":
    main()
