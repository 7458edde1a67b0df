"""Sub-pixel convolution super-resolution (ESPCN), after pytorch/examples
``super_resolution``: a network of 5x5/3x3 convolutions ending in ``nn.PixelShuffle``, weights
initialised with ``init.orthogonal_`` scaled by ``init.calculate_gain('relu')``, MSE loss,
Adam, and PSNR on a test set (``10 * log10(1 / mse)``). The low-resolution inputs are made
from the high-resolution targets with ``F.interpolate(mode='bicubic')`` (or ``avg_pool2d``),
the way the example's transforms resize them.

The images are synthetic luminance planes: sums of a few random sinusoids.
"""

from __future__ import annotations

import argparse
from math import log10

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor**2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv2.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv3.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv4.weight)


def sinusoid_images(rng, n, size):
    yy, xx = np.mgrid[0:size, 0:size] / size
    images = np.zeros((n, 1, size, size))
    for _ in range(3):
        fy, fx = rng.uniform(0.5, 3.0, size=(2, n, 1, 1, 1))
        phase = rng.uniform(0, 2 * np.pi, size=(n, 1, 1, 1))
        images += np.sin(2 * np.pi * (fy * yy + fx * xx) + phase)
    return (0.5 + images / 6.0).astype(np.float32)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every batch's loss and each epoch's average PSNR on the test set."""
    parser = argparse.ArgumentParser(description="PyTorch Super Res Example")
    parser.add_argument("--upscale_factor", type=int, default=2, help="super resolution factor")
    parser.add_argument("--batchSize", type=int, default=4, help="training batch size")
    parser.add_argument("--testBatchSize", type=int, default=4, help="testing batch size")
    parser.add_argument("--nEpochs", type=int, default=2, help="number of epochs to train for")
    parser.add_argument("--lr", type=float, default=0.01, help="Learning Rate. Default=0.01")
    parser.add_argument("--size", type=int, default=16, help="high-resolution crop size")
    parser.add_argument("--downsample", choices=["bicubic", "area"], default="bicubic")
    parser.add_argument("--seed", type=int, default=123, help="random seed to use")
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    opt = parser.parse_args(argv)
    print(opt)

    torch.manual_seed(opt.seed)
    rng = np.random.default_rng(opt.seed)
    device = torch.device("cpu")

    print("===> Loading datasets")
    targets = torch.from_numpy(sinusoid_images(rng, 24, opt.size))
    if opt.downsample == "bicubic":
        inputs = F.interpolate(targets, scale_factor=1 / opt.upscale_factor, mode="bicubic",
                               align_corners=False)  # fmt: skip
    else:
        inputs = F.avg_pool2d(targets, opt.upscale_factor)
    train_set = TensorDataset(inputs[:16], targets[:16])
    test_set = TensorDataset(inputs[16:], targets[16:])
    training_data_loader = DataLoader(dataset=train_set, batch_size=opt.batchSize, shuffle=True)
    testing_data_loader = DataLoader(dataset=test_set, batch_size=opt.testBatchSize)

    print("===> Building model")
    model = Net(upscale_factor=opt.upscale_factor).to(device)
    if opt.save_init:
        torch.save(model.state_dict(), opt.save_init)
    if opt.init:
        model.load_state_dict(torch.load(opt.init))
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=opt.lr)

    losses = []

    def train(epoch):
        epoch_loss = 0
        for _iteration, batch in enumerate(training_data_loader, 1):
            input, target = batch[0].to(device), batch[1].to(device)

            optimizer.zero_grad()
            loss = criterion(model(input), target)
            epoch_loss += loss.item()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

        print(
            f"===> Epoch {epoch} Complete: Avg. Loss: {epoch_loss / len(training_data_loader):.4f}"
        )

    def test():
        avg_psnr = 0
        with torch.no_grad():
            for batch in testing_data_loader:
                input, target = batch[0].to(device), batch[1].to(device)

                prediction = model(input)
                mse = criterion(prediction, target)
                psnr = 10 * log10(1 / mse.item())
                avg_psnr += psnr
        print(f"===> Avg. PSNR: {avg_psnr / len(testing_data_loader):.4f} dB")
        losses.append(avg_psnr / len(testing_data_loader))

    for epoch in range(1, opt.nEpochs + 1):
        train(epoch)
        test()
    return losses


if __name__ == "__main__":
    main()
