"""Binary segmentation with a small U-Net, in the style of milesial/Pytorch-UNet: double
convolutions with BatchNorm, max-pool downsampling, ``ConvTranspose2d`` upsampling (or
bilinear ``nn.Upsample``), skip connections joined by ``torch.cat`` after ``F.pad`` to the
skip's size, and the loss ``BCEWithLogits + (1 - Dice)``. RMSprop with momentum and weight
decay, ``ReduceLROnPlateau`` on the validation Dice score, gradient clipping, optionally the
``channels_last`` memory format.

The images are synthetic: noisy discs whose masks are the disc itself.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, in_channels, out_channels, bilinear=False):
        super().__init__()
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        # input is CHW
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels, n_classes, base=4, bilinear=False):
        super().__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.bilinear = bilinear
        factor = 2 if bilinear else 1
        self.inc = DoubleConv(n_channels, base)
        self.down1 = Down(base, base * 2)
        self.down2 = Down(base * 2, base * 4 // factor)
        self.up1 = Up(base * 4, base * 2 // factor, bilinear)
        self.up2 = Up(base * 2, base, bilinear)
        self.outc = nn.Conv2d(base, n_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


def dice_coeff(input, target, reduce_batch_first=False, epsilon=1e-6):
    # Average of Dice coefficient for all batches, or for a single mask
    assert input.size() == target.size()
    assert input.dim() == 3 or not reduce_batch_first
    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)
    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)
    dice = (inter + epsilon) / (sets_sum + epsilon)
    return dice.mean()


def dice_loss(input, target):
    return 1 - dice_coeff(input, target, reduce_batch_first=True)


def discs(rng, n, size):
    yy, xx = np.mgrid[0:size, 0:size]
    cy, cx = rng.uniform(size * 0.3, size * 0.7, size=(2, n, 1, 1))
    radius = rng.uniform(size * 0.15, size * 0.3, size=(n, 1, 1))
    masks = ((yy - cy) ** 2 + (xx - cx) ** 2 < radius**2).astype(np.float32)
    images = masks[:, None] * 0.8 + 0.3 * rng.normal(size=(n, 1, size, size))
    return images.astype(np.float32), masks


@torch.inference_mode()
def evaluate(net, dataloader, memory_format):
    net.eval()
    dice_score = 0
    for image, mask_true in dataloader:
        image = image.to(memory_format=memory_format)
        mask_pred = net(image)
        mask_pred = (F.sigmoid(mask_pred.squeeze(1)) > 0.5).float()
        dice_score += dice_coeff(mask_pred, mask_true, reduce_batch_first=False)
    net.train()
    return dice_score / max(len(dataloader), 1)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every step's loss, each epoch's validation Dice and learning rate."""
    parser = argparse.ArgumentParser(description="U-Net on synthetic discs")
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--train", type=int, default=16)
    parser.add_argument("--val", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--bilinear", action="store_true")
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    images, masks = discs(rng, args.train + args.val, args.size)
    train_set = TensorDataset(torch.from_numpy(images[: args.train]),
                              torch.from_numpy(masks[: args.train]))  # fmt: skip
    val_set = TensorDataset(torch.from_numpy(images[args.train :]),
                            torch.from_numpy(masks[args.train :]))  # fmt: skip
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=args.batch_size, shuffle=False, drop_last=True)

    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = UNet(n_channels=1, n_classes=1, bilinear=args.bilinear)
    model = model.to(memory_format=memory_format)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))

    optimizer = torch.optim.RMSprop(model.parameters(), lr=args.lr, weight_decay=1e-8,
                                    momentum=0.9, foreach=True)  # fmt: skip
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, "max", patience=0)
    criterion = nn.BCEWithLogitsLoss()

    losses = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        for images_b, true_masks in train_loader:
            images_b = images_b.to(dtype=torch.float32, memory_format=memory_format)
            true_masks = true_masks.to(dtype=torch.long)
            masks_pred = model(images_b)
            loss = criterion(masks_pred.squeeze(1), true_masks.float())
            loss += dice_loss(F.sigmoid(masks_pred.squeeze(1)), true_masks.float())

            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())

        val_score = evaluate(model, val_loader, memory_format)
        scheduler.step(val_score)
        losses += [float(val_score), optimizer.param_groups[0]["lr"]]
        print(f"epoch {epoch}: loss {losses[-3]:.4f} dice {float(val_score):.4f}")

    return losses


if __name__ == "__main__":
    main()
