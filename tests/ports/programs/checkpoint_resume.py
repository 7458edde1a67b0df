"""Training that stops and resumes from a checkpoint file, the way ImageNet-style training
scripts (pytorch/examples ``imagenet/main.py``) do it: a small ResNet with BatchNorm,
``torch.save({'epoch', 'state_dict', 'best_acc1', 'optimizer', 'scheduler'}, path)`` each
epoch plus a ``shutil.copyfile`` of the best one, then a new process's worth of fresh objects
resumed with ``torch.load(path, map_location=...)`` and ``load_state_dict`` and trained on
for the remaining epochs. SGD with momentum, nesterov and weight decay, MultiStepLR, the
model in ``eval()`` (running BatchNorm statistics) for validation and top-1 / top-k accuracy
computed with ``topk`` as in the example's ``accuracy()``. The run must equal an
uninterrupted one, which the program reports too.

The images are synthetic: class-dependent colour gradients plus noise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, num_classes, width=8):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.layer1 = BasicBlock(width, width)
        self.layer2 = BasicBlock(width, 2 * width, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2 * width, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def save_checkpoint(state, is_best, directory, filename="checkpoint.pth.tar"):
    path = os.path.join(directory, filename)
    torch.save(state, path)
    if is_best:
        shutil.copyfile(path, os.path.join(directory, "model_best.pth.tar"))


def synthetic_images(rng, n, num_classes, size):
    y = rng.integers(0, num_classes, size=n)
    ramp = np.linspace(-1, 1, size)
    base = np.stack([np.outer(ramp, np.ones(size)), np.outer(np.ones(size), ramp),
                     np.outer(ramp, ramp)])  # fmt: skip
    signs = rng.choice([-1.0, 1.0], size=(num_classes, 3, 1, 1))
    x = signs[y] * base + 0.5 * rng.normal(size=(n, 3, size, size))
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)


def build(args, device):
    model = ResNet(args.classes).to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, nesterov=True,
                                weight_decay=1e-4)  # fmt: skip
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1, 2], gamma=0.3)
    return model, optimizer, scheduler


def run_epochs(first, last, model, optimizer, scheduler, loaders, directory, best_acc1, log):
    train_loader, val_loader = loaders
    criterion = nn.CrossEntropyLoss()
    for epoch in range(first, last):
        model.train()
        for images, target in train_loader:
            output = model(images)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log.append(loss.item())
        scheduler.step()

        model.eval()
        top1, top3, val_loss = 0.0, 0.0, 0.0
        with torch.no_grad():
            for images, target in val_loader:
                output = model(images)
                val_loss += criterion(output, target).item()
                acc1, acc3 = accuracy(output, target, topk=(1, 3))
                top1, top3 = top1 + acc1[0].item(), top3 + acc3[0].item()
        acc1 = top1 / len(val_loader)
        log += [val_loss / len(val_loader), acc1, top3 / len(val_loader)]

        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)
        save_checkpoint({"epoch": epoch + 1, "arch": "resnet-tiny",
                         "state_dict": model.state_dict(), "best_acc1": best_acc1,
                         "optimizer": optimizer.state_dict(),
                         "scheduler": scheduler.state_dict()}, is_best, directory)  # fmt: skip
    return best_acc1


def main(argv: list[str] | None = None) -> list[float]:
    """Train ``--stop-at`` epochs, resume from the checkpoint in fresh objects and finish;
    every loss and validation number, the best model's validation accuracy, and whether the
    resumed run equals an uninterrupted one."""
    parser = argparse.ArgumentParser(description="checkpoint and resume")
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--size", type=int, default=6)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--stop-at", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    device = torch.device("cpu")
    x, y = synthetic_images(rng, 40, args.classes, args.size)
    train_set, val_set = TensorDataset(x[:32], y[:32]), TensorDataset(x[32:], y[32:])
    # no shuffling: the resumed and the uninterrupted run see the same batches
    loaders = (DataLoader(train_set, batch_size=args.batch_size),
               DataLoader(val_set, batch_size=8))  # fmt: skip

    model, optimizer, scheduler = build(args, device)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    initial = {k: v.clone() for k, v in model.state_dict().items()}

    log: list[float] = []
    with tempfile.TemporaryDirectory() as directory:
        best_acc1 = run_epochs(0, args.stop_at, model, optimizer, scheduler, loaders,
                               directory, 0.0, log)  # fmt: skip
        del model, optimizer, scheduler

        # resume, as `--resume checkpoint.pth.tar` does
        model, optimizer, scheduler = build(args, device)
        checkpoint = torch.load(os.path.join(directory, "checkpoint.pth.tar"),
                                map_location=device)  # fmt: skip
        start_epoch = checkpoint["epoch"]
        best_acc1 = checkpoint["best_acc1"]
        model.load_state_dict(checkpoint["state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        print(f"=> loaded checkpoint (epoch {checkpoint['epoch']})")
        best_acc1 = run_epochs(start_epoch, args.epochs, model, optimizer, scheduler, loaders,
                               directory, best_acc1, log)  # fmt: skip
        final = model.state_dict()

        best = ResNet(args.classes)
        best.load_state_dict(torch.load(os.path.join(directory, "model_best.pth.tar"))
                             ["state_dict"])  # fmt: skip
        best.eval()
        with torch.no_grad():
            correct = sum((best(images).argmax(1) == target).sum().item()
                          for images, target in loaders[1])  # fmt: skip
        log += [best_acc1, correct / len(val_set)]

    # the same epochs without the interruption
    model, optimizer, scheduler = build(args, device)
    model.load_state_dict(initial)
    with tempfile.TemporaryDirectory() as directory:
        straight: list[float] = []
        run_epochs(0, args.epochs, model, optimizer, scheduler, loaders, directory, 0.0,
                   straight)  # fmt: skip
    same = straight == log[: len(straight)] and all(
        torch.equal(final[k], v) for k, v in model.state_dict().items()
    )
    log.append(float(same))
    return log


if __name__ == "__main__":
    main()
