"""A StyleGAN2-style generator and discriminator step (after rosinality's stylegan2-pytorch
and NVIDIA's training loop), scaled down, in float64.

Generator: a mapping MLP with ``nn.LeakyReLU(0.2)``, modulated convolutions with weight
demodulation done as one grouped ``F.conv2d(groups=batch)`` over the batch folded into
channels, upsampling by ``F.interpolate`` (bilinear, and ``nearest-exact``), per-pixel noise
from ``torch.randn`` scaled by a learned strength, a block run through
``torch.utils.checkpoint.checkpoint(use_reentrant=False)``, an EMA copy from ``copy.deepcopy``
updated with ``lerp_``. Discriminator: ``channels_last`` inputs and weights, reals downscaled
by ``F.interpolate(antialias=True)``, ``F.avg_pool2d(ceil_mode=True,
count_include_pad=False)``, ``MaxPool2d(dilation=2, ceil_mode=True)``, a minibatch-stddev
layer, ``nn.AdaptiveAvgPool2d((3, 2))``. Losses: non-saturating ``F.softplus`` losses, the R1
penalty from ``torch.autograd.grad(create_graph=True)`` on the reals, a
``BCEWithLogitsLoss(pos_weight=...)`` auxiliary head; Adam with betas (0, 0.99) for each
network, ``requires_grad_`` toggled around each step. Returns every loss and every
parameter's and gradient's values.
"""

from __future__ import annotations

import argparse
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class ModulatedConv(nn.Module):
    def __init__(self, cin, cout, style_dim, k=3, demodulate=True):
        super().__init__()
        self.cin, self.cout, self.k, self.demodulate = cin, cout, k, demodulate
        self.weight = nn.Parameter(torch.randn(1, cout, cin, k, k))
        self.scale = 1 / math.sqrt(cin * k * k)
        self.modulation = nn.Linear(style_dim, cin)
        with torch.no_grad():
            self.modulation.bias.fill_(1.0)

    def forward(self, x, style):
        b = x.shape[0]
        s = self.modulation(style).view(b, 1, self.cin, 1, 1)
        w = self.scale * self.weight * s
        if self.demodulate:
            demod = torch.rsqrt(w.pow(2).sum([2, 3, 4]) + 1e-8)
            w = w * demod.view(b, self.cout, 1, 1, 1)
        w = w.view(b * self.cout, self.cin, self.k, self.k)
        x = x.reshape(1, b * self.cin, *x.shape[2:])
        out = F.conv2d(x, w, padding=self.k // 2, groups=b)
        return out.view(b, self.cout, *out.shape[2:])


class StyledBlock(nn.Module):
    def __init__(self, cin, cout, style_dim, mode):
        super().__init__()
        self.mode = mode
        self.conv = ModulatedConv(cin, cout, style_dim)
        self.noise_strength = nn.Parameter(torch.zeros(1))
        self.bias = nn.Parameter(torch.zeros(1, cout, 1, 1))
        self.act = nn.LeakyReLU(0.2)

    def forward(self, x, style, noise):
        if self.mode == "bilinear":
            x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        else:
            x = F.interpolate(x, scale_factor=2, mode="nearest-exact")
        x = self.conv(x, style)
        return self.act(x + self.noise_strength * noise + self.bias) * math.sqrt(2)


class Generator(nn.Module):
    def __init__(self, z_dim=6, style_dim=6, ch=4):
        super().__init__()
        self.mapping = nn.Sequential(
            nn.Linear(z_dim, style_dim), nn.LeakyReLU(0.2),
            nn.Linear(style_dim, style_dim), nn.LeakyReLU(0.2),
        )  # fmt: skip
        self.const = nn.Parameter(torch.randn(1, ch, 2, 2))
        self.b1 = StyledBlock(ch, ch, style_dim, "bilinear")
        self.b2 = StyledBlock(ch, ch, style_dim, "nearest-exact")
        self.to_rgb = ModulatedConv(ch, 3, style_dim, k=1, demodulate=False)

    def forward(self, z):
        w = self.mapping(z)
        x = self.const.expand(z.shape[0], -1, -1, -1)
        x = checkpoint(self.b1, x, w, torch.randn(z.shape[0], 1, 4, 4), use_reentrant=False)
        x = self.b2(x, w, torch.randn(z.shape[0], 1, 8, 8))
        return self.to_rgb(x, w)


class Discriminator(nn.Module):
    def __init__(self, ch=4):
        super().__init__()
        self.conv1 = nn.Conv2d(3, ch, 3, padding=1)
        self.pool = nn.MaxPool2d(2, stride=1, dilation=2, ceil_mode=True)
        self.conv2 = nn.Conv2d(ch + 1, ch, 3, padding=1)
        self.adaptive = nn.AdaptiveAvgPool2d((3, 2))
        self.fc = nn.Linear(ch * 6, 1)
        self.aux = nn.Linear(ch * 6, 2)

    def forward(self, x):
        h = F.leaky_relu(self.conv1(x), 0.2)
        h = F.avg_pool2d(h, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        h = self.pool(h)
        # minibatch standard deviation over groups of two
        b, c, H, W = h.shape
        y = h.view(2, -1, c, H, W)
        y = torch.sqrt(y.var(0, unbiased=False) + 1e-8).mean([1, 2, 3])
        y = y.view(-1, 1, 1, 1).repeat(2, 1, H, W)
        h = F.leaky_relu(self.conv2(torch.cat([h, y], 1)), 0.2)
        h = self.adaptive(h).flatten(1)
        return self.fc(h).squeeze(1), self.aux(h)


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:8].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:8].tolist() + [p.grad.abs().sum().item()]
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
    G, D = Generator(), Discriminator()
    if args.init:
        state = torch.load(args.init)
        G.load_state_dict(state["G"])
        D.load_state_dict(state["D"])
    if args.save_init:
        torch.save({"G": G.state_dict(), "D": D.state_dict()}, args.save_init)
    D = D.to(memory_format=torch.channels_last)
    G_ema = copy.deepcopy(G).eval()
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.0, 0.99))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.0, 0.99), eps=1e-8)
    aux_loss = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0, 0.5]))
    out = []
    for _ in range(args.steps):
        big = torch.randn(4, 3, 12, 12)
        real = F.interpolate(big, size=(8, 8), mode="bilinear", antialias=True)
        real = real.contiguous(memory_format=torch.channels_last)
        attrs = (big.mean((2, 3))[:, :2] > 0).double()
        # discriminator step
        G.requires_grad_(False)
        D.requires_grad_(True)
        fake = G(torch.randn(4, 6))
        real.requires_grad_(True)
        real_pred, real_aux = D(real)
        fake_pred, _ = D(fake.detach())
        (grad_real,) = torch.autograd.grad(real_pred.sum(), real, create_graph=True)
        r1 = grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()
        d_loss = F.softplus(-real_pred).mean() + F.softplus(fake_pred).mean()
        d_loss = d_loss + 5.0 * r1 + aux_loss(real_aux, attrs)
        opt_d.zero_grad()
        d_loss.backward()
        out += [d_loss.item(), r1.item()] + values(D)
        opt_d.step()
        # generator step
        G.requires_grad_(True)
        D.requires_grad_(False)
        fake_pred, _ = D(G(torch.randn(4, 6)))
        g_loss = F.softplus(-fake_pred).mean()
        opt_g.zero_grad()
        g_loss.backward()
        out += [g_loss.item()] + values(G)
        opt_g.step()
        with torch.no_grad():
            for p_ema, p in zip(G_ema.parameters(), G.parameters()):
                p_ema.lerp_(p, 0.5)
    with torch.no_grad():
        out += G_ema(torch.randn(2, 6)).flatten().tolist()
    return out


if __name__ == "__main__":
    main()
