"""Spatial transformer network, in the style of PyTorch's "Spatial Transformer Networks" tutorial.

A localisation net (Conv2d, MaxPool2d, ReLU) regresses the 2x3 affine matrix ``theta``
(``fc_loc``'s last layer starts near the identity: weight zeroed, bias copied in), and
``F.affine_grid`` + ``F.grid_sample`` warp the input before a small classifier trained with
``F.nll_loss`` and SGD; then an eval pass over a test set counts correct predictions and
reports the mean transform. The digits are synthetic: shifted, scaled squares and crosses.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class Net(nn.Module):
    def __init__(self, size, align_corners, padding_mode):
        super().__init__()
        self.align_corners = align_corners
        self.padding_mode = padding_mode
        self.conv1 = nn.Conv2d(1, 4, kernel_size=3)
        self.conv2 = nn.Conv2d(4, 8, kernel_size=3)
        self.conv2_drop = nn.Dropout2d()
        flat = 8 * ((size - 2) // 2 - 2) ** 2
        self.fc1 = nn.Linear(flat, 16)
        self.fc2 = nn.Linear(16, 3)

        # Spatial transformer localization-network
        self.localization = nn.Sequential(
            nn.Conv2d(1, 4, kernel_size=3),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(4, 6, kernel_size=3),
            nn.ReLU(True),
        )
        self.loc_flat = 6 * ((size - 2) // 2 - 2) ** 2
        # Regressor for the 3 * 2 affine matrix
        self.fc_loc = nn.Sequential(
            nn.Linear(self.loc_flat, 16), nn.ReLU(True), nn.Linear(16, 3 * 2)
        )

        # Initialize the weights/bias near the identity transformation
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(
            torch.tensor([0.91372, 0.04713, 0.03127, -0.04291, 0.95683, 0.01937], dtype=torch.float)
        )

    # Spatial transformer network forward function
    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, self.loc_flat)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)

        grid = F.affine_grid(theta, x.size(), align_corners=self.align_corners)
        x = F.grid_sample(x, grid, padding_mode=self.padding_mode, align_corners=self.align_corners)
        return x, theta

    def forward(self, x):
        # transform the input
        x, theta = self.stn(x)

        # Perform the usual forward pass
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(self.conv2_drop(self.conv2(x)))
        x = x.view(x.size(0), -1)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1), theta


def shapes(rng, count, size):
    """``count`` images (N, 1, size, size): a square outline, a cross or a filled disc, each
    shifted and scaled at random; the labels 0, 1, 2."""
    labels = rng.integers(0, 3, size=count)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
    images = np.zeros((count, size, size))
    for i, label in enumerate(labels):
        cy, cx = rng.uniform(size * 0.35, size * 0.65, size=2)
        r = rng.uniform(size * 0.2, size * 0.3)
        dy, dx = np.abs(yy - cy), np.abs(xx - cx)
        if label == 0:
            img = (np.maximum(dy, dx) < r) & (np.maximum(dy, dx) > r - 1.5)
        elif label == 1:
            img = ((dy < 1.0) & (dx < r)) | ((dx < 1.0) & (dy < r))
        else:
            img = dy**2 + dx**2 < r**2
        images[i] = img + rng.normal(0.0, 0.05, size=(size, size))
    return torch.tensor(images[:, None], dtype=torch.float32), torch.from_numpy(labels)


def main(argv=None):
    parser = argparse.ArgumentParser(description="spatial transformer network")
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--align-corners", action="store_true")
    parser.add_argument(
        "--padding-mode", default="zeros", choices=["zeros", "border", "reflection"]
    )
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    train_x, train_y = shapes(rng, args.steps * args.batch_size, args.size)
    test_x, test_y = shapes(rng, 2 * args.batch_size, args.size)
    train_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(train_x, train_y), batch_size=args.batch_size, shuffle=True
    )
    model = Net(args.size, args.align_corners, args.padding_mode)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    losses = []
    for _ in range(args.epochs):
        model.train()
        for data, target in train_loader:
            optimizer.zero_grad()
            output, _ = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

        model.eval()
        with torch.no_grad():
            output, theta = model(test_x)
            test_loss = F.nll_loss(output, test_y, reduction="sum").item() / len(test_y)
            pred = output.max(1, keepdim=True)[1]
            correct = pred.eq(test_y.view_as(pred)).sum().item()
            warped, _ = model.stn(test_x[:4])
        losses += [test_loss, float(correct), *theta.mean(0).flatten().tolist()]
        losses.append(warped.abs().mean().item())
    return losses


if __name__ == "__main__":
    main()
