"""Image-to-image networks from pytorch/examples: ``fast_neural_style``'s TransformerNet and
``super_resolution``'s sub-pixel network, trained a few steps each.

TransformerNet: ``nn.ReflectionPad2d`` + convolution layers, ``nn.InstanceNorm2d(affine=True)``,
residual blocks, and upsampling by ``F.interpolate(mode="nearest", scale_factor=2)``; its loss
is the tutorial's content MSE plus a style term of Gram matrices (``bmm`` of features and
their ``transpose(1, 2)``) of a batch normalised by ``(batch - mean) / std`` with ``new_tensor``
statistics. The super-resolution network: ``nn.PixelShuffle``, orthogonal initialisation with
``init.calculate_gain("relu")`` (drawn in torch; the harness loads torch's initial weights),
MSE against a target, and PSNR with ``10 * log10(1 / mse)``.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init


class ConvLayer(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super().__init__()
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        return self.conv2d(self.reflection_pad(x))


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = nn.InstanceNorm2d(channels, affine=True)
        self.relu = nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        return out + residual


class UpsampleConvLayer(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super().__init__()
        self.upsample = upsample
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        x_in = x
        if self.upsample:
            x_in = F.interpolate(x_in, mode="nearest", scale_factor=self.upsample)
        return self.conv2d(self.reflection_pad(x_in))


class TransformerNet(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.conv1 = ConvLayer(3, width, kernel_size=5, stride=1)
        self.in1 = nn.InstanceNorm2d(width, affine=True)
        self.conv2 = ConvLayer(width, 2 * width, kernel_size=3, stride=2)
        self.in2 = nn.InstanceNorm2d(2 * width, affine=True)
        self.res1 = ResidualBlock(2 * width)
        self.res2 = ResidualBlock(2 * width)
        self.deconv1 = UpsampleConvLayer(2 * width, width, kernel_size=3, stride=1, upsample=2)
        self.in3 = nn.InstanceNorm2d(width, affine=True)
        self.deconv2 = ConvLayer(width, 3, kernel_size=5, stride=1)
        self.relu = nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.res2(self.res1(y))
        y = self.relu(self.in3(self.deconv1(y)))
        return self.deconv2(y)


class Features(nn.Module):
    """A small stand-in for the tutorial's VGG16 slices: two feature maps."""

    def __init__(self):
        super().__init__()
        self.slice1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True))
        self.slice2 = nn.Sequential(
            nn.MaxPool2d(2, 2), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True)
        )

    def forward(self, X):
        h1 = self.slice1(X)
        h2 = self.slice2(h1)
        return h1, h2


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    return features.bmm(features_t) / (ch * h * w)


def normalize_batch(batch):
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std


class SuperResolution(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, upscale_factor**2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        return self.pixel_shuffle(self.conv3(x))

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv2.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv3.weight)


def main(argv=None):
    parser = argparse.ArgumentParser(description="fast neural style and super resolution")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(42)
    transformer, features, sr = TransformerNet(), Features(), SuperResolution(2)
    if args.save_init:
        torch.save(
            {"t": transformer.state_dict(), "f": features.state_dict(), "s": sr.state_dict()},
            args.save_init,
        )
    if args.init:
        state = torch.load(args.init)
        transformer.load_state_dict(state["t"])
        features.load_state_dict(state["f"])
        sr.load_state_dict(state["s"])
    losses = []

    optimizer = torch.optim.Adam(transformer.parameters(), 1e-3)
    mse_loss = torch.nn.MSELoss()
    features.requires_grad_(False)  # the tutorial's Vgg16(requires_grad=False)
    style = torch.rand(1, 3, args.size, args.size) * 255
    style = style.repeat(2, 1, 1, 1)
    features_style = features(normalize_batch(style))
    gram_style = [gram_matrix(y) for y in features_style]
    for _ in range(args.steps):
        x = torch.rand(2, 3, args.size, args.size) * 255
        n_batch = len(x)
        optimizer.zero_grad()
        y = transformer(x)
        y = normalize_batch(y)
        x = normalize_batch(x)
        features_y = features(y)
        features_x = features(x)
        content_loss = 1e5 * mse_loss(features_y[1], features_x[1])
        style_loss = 0.0
        for ft_y, gm_s in zip(features_y, gram_style):
            gm_y = gram_matrix(ft_y)
            style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
        style_loss *= 1e10
        total_loss = content_loss + style_loss
        total_loss.backward()
        optimizer.step()
        losses += [content_loss.item(), style_loss.item()]

    optimizer = torch.optim.Adam(sr.parameters(), lr=0.01)
    criterion = nn.MSELoss()
    for _ in range(args.steps):
        target = torch.rand(4, 1, args.size, args.size)
        input = F.avg_pool2d(target, 2)
        optimizer.zero_grad()
        loss = criterion(sr(input), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        mse = criterion(sr(input), target)
        losses.append(10 * math.log10(1 / mse.item()))
    return losses


if __name__ == "__main__":
    main()
