"""A small ResNet on CIFAR-10-shaped images, in the style of the common "train a ResNet on
CIFAR-10 in PyTorch" scripts (kuangliu/pytorch-cifar, the CIFAR-10 tutorial): BasicBlocks with
BatchNorm and shortcut projections, random-crop and flip augmentation done on tensors, label
smoothing, SGD with Nesterov momentum and weight decay under OneCycleLR or cosine annealing,
gradient accumulation, an eval-mode accuracy pass and a checkpoint round trip; optionally an
exponential moving average of the weights or stochastic weight averaging (``swa_utils``: SWALR,
update_bn), as in the PyTorch SWA recipe.

The images are synthetic: each class is a fixed colour pattern plus noise.
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
from torch.utils.data import DataLoader, TensorDataset


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super(BasicBlock, self).__init__()
        self.conv1 = nn.Conv2d(
            in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False
        )
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)

        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != self.expansion * planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(
                    in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False
                ),
                nn.BatchNorm2d(self.expansion * planes),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        out = F.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, block, num_blocks, num_classes=10, width=8):
        super(ResNet, self).__init__()
        self.in_planes = width

        self.conv1 = nn.Conv2d(3, width, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.layers = nn.ModuleList(
            [
                self._make_layer(block, width * 2**i, n, stride=1 if i == 0 else 2)
                for i, n in enumerate(num_blocks)
            ]
        )
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.linear = nn.Linear(self.in_planes * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes, num_blocks, stride):
        strides = [stride] + [1] * (num_blocks - 1)
        layers = []
        for stride in strides:
            layers.append(block(self.in_planes, planes, stride))
            self.in_planes = planes * block.expansion
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        for layer in self.layers:
            out = layer(out)
        out = self.avgpool(out)
        out = torch.flatten(out, 1)
        out = self.linear(out)
        return out


def random_crop_flip(images, padding=2):
    """Per-image random crop of the zero-padded batch and random horizontal flip."""
    n, _, h, w = images.shape
    padded = F.pad(images, (padding, padding, padding, padding), mode="constant", value=0.0)
    dx = torch.randint(0, 2 * padding + 1, (n,))
    dy = torch.randint(0, 2 * padding + 1, (n,))
    crops = torch.stack(
        [padded[i, :, dy[i] : dy[i] + h, dx[i] : dx[i] + w] for i in range(n)], dim=0
    )
    flip = torch.rand(n) < 0.5
    return torch.where(flip[:, None, None, None], crops.flip(3), crops)


def synthetic_cifar(rng, count, size, classes):
    patterns = rng.normal(0.0, 1.0, size=(classes, 3, size, size)).astype(np.float32)
    labels = rng.integers(0, classes, size=count)
    noise = rng.normal(0.0, 0.8, size=(count, 3, size, size)).astype(np.float32)
    images = patterns[labels] + noise
    return torch.from_numpy(images), torch.from_numpy(labels)


def train_epoch(model, loader, criterion, optimizer, scheduler, accum_steps, losses, ema=None):
    model.train()
    optimizer.zero_grad(set_to_none=True)
    for step, (inputs, targets) in enumerate(loader):
        inputs = random_crop_flip(inputs)
        outputs = model(inputs)
        loss = criterion(outputs, targets) / accum_steps
        loss.backward()
        if (step + 1) % accum_steps == 0:
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
            if ema is not None:
                ema.update_parameters(model)
        losses.append(loss.item() * accum_steps)


def test(model, loader, criterion):
    model.eval()
    test_loss = 0.0
    correct = 0
    total = 0
    with torch.no_grad():
        for inputs, targets in loader:
            outputs = model(inputs)
            test_loss += criterion(outputs, targets).item() * targets.size(0)
            predicted = outputs.argmax(1)
            total += targets.size(0)
            correct += predicted.eq(targets).sum().item()
    print(f"test loss {test_loss / total:.4f} | acc {100.0 * correct / total:.1f}%")
    return test_loss / total, correct


def main(argv: list[str] | None = None) -> list[float]:
    """Train and test; every step's loss, each epoch's test loss and accuracy count, and the
    reloaded checkpoint's test loss."""
    parser = argparse.ArgumentParser(description="PyTorch CIFAR10 Training")
    parser.add_argument("--lr", default=0.1, type=float, help="learning rate")
    parser.add_argument("--epochs", default=2, type=int)
    parser.add_argument("--batch-size", default=8, type=int)
    parser.add_argument("--train-size", default=32, type=int)
    parser.add_argument("--image-size", default=8, type=int)
    parser.add_argument("--width", default=4, type=int)
    parser.add_argument("--accum-steps", default=2, type=int)
    parser.add_argument("--label-smoothing", default=0.1, type=float)
    parser.add_argument("--schedule", default="onecycle", help="onecycle or cosine")
    parser.add_argument("--checkpoint", default="bytesio", help="bytesio or file")
    parser.add_argument("--average", default=None, help="weight averaging: ema or swa")
    parser.add_argument("--swa-lr", default=0.05, type=float)
    parser.add_argument("--seed", default=0, type=int)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    x_train, y_train = synthetic_cifar(rng, args.train_size, args.image_size, 10)
    x_test, y_test = synthetic_cifar(rng, 16, args.image_size, 10)
    mean = x_train.mean(dim=(0, 2, 3), keepdim=True)
    std = x_train.std(dim=(0, 2, 3), keepdim=True)
    trainset = TensorDataset((x_train - mean) / std, y_train)
    testset = TensorDataset((x_test - mean) / std, y_test)
    trainloader = DataLoader(trainset, batch_size=args.batch_size, shuffle=True, drop_last=True)
    testloader = DataLoader(testset, batch_size=8, shuffle=False)

    net = ResNet(BasicBlock, [1, 1], width=args.width)
    if args.save_init:
        torch.save(net.state_dict(), args.save_init)
    if args.init:
        net.load_state_dict(torch.load(args.init))

    criterion = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    optimizer = optim.SGD(
        net.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4, nesterov=True
    )
    updates_per_epoch = len(trainloader) // args.accum_steps
    if args.schedule == "onecycle":
        scheduler = torch.optim.lr_scheduler.OneCycleLR(
            optimizer, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=updates_per_epoch
        )
    else:
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(
            optimizer, T_max=args.epochs * updates_per_epoch
        )

    ema_model = swa_model = None
    if args.average == "ema":
        ema_model = AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(0.9), use_buffers=True)
    elif args.average == "swa":
        swa_model = AveragedModel(net)
        swa_scheduler = SWALR(optimizer, swa_lr=args.swa_lr, anneal_epochs=1)

    losses: list[float] = []
    best_acc = -1
    with tempfile.TemporaryDirectory() as tmp:
        buffer = io.BytesIO()
        for epoch in range(args.epochs):
            train_epoch(
                net,
                trainloader,
                criterion,
                optimizer,
                scheduler,
                args.accum_steps,
                losses,
                ema_model,
            )
            if swa_model is not None:
                swa_model.update_parameters(net)
                swa_scheduler.step()
            test_loss, correct = test(net, testloader, criterion)
            losses += [test_loss, float(correct)]
            if correct > best_acc:
                state = {
                    "net": net.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "acc": correct,
                    "epoch": epoch,
                }
                if args.checkpoint == "bytesio":
                    buffer = io.BytesIO()
                    torch.save(state, buffer)
                else:
                    torch.save(state, os.path.join(tmp, "ckpt.pth"))
                best_acc = correct

        # Resume from the best checkpoint in a fresh model and optimizer.
        if args.checkpoint == "bytesio":
            buffer.seek(0)
            checkpoint = torch.load(buffer)
        else:
            checkpoint = torch.load(os.path.join(tmp, "ckpt.pth"))
    restored = ResNet(BasicBlock, [1, 1], width=args.width)
    restored.load_state_dict(checkpoint["net"])
    optimizer = optim.SGD(
        restored.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4, nesterov=True
    )
    optimizer.load_state_dict(checkpoint["optimizer"])
    print(f"restored epoch {checkpoint['epoch']} with {checkpoint['acc']} correct")
    test_loss, _ = test(restored, testloader, criterion)
    losses.append(test_loss)
    if ema_model is not None:
        losses.append(test(ema_model, testloader, criterion)[0])
    if swa_model is not None:
        # Recompute the batch-norm statistics for the averaged weights.
        update_bn(trainloader, swa_model)
        losses += [test(swa_model, testloader, criterion)[0], float(swa_model.n_averaged)]
    return losses


if __name__ == "__main__":
    main()
