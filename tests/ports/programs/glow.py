"""Glow (after rosinality/glow-pytorch's ``model.py`` and ``train.py``), one block of flow
steps on 4x4 images, in float64.

ActNorm with data-dependent initialisation (a ``uint8`` ``initialized`` buffer ``fill_(1)``-ed,
``loc.data.copy_(-mean)`` and ``scale.data.copy_(1 / (std + 1e-6))`` under ``torch.no_grad``),
its log-determinant ``h * w * torch.sum(torch.log(torch.abs(scale)))``; the LU-decomposed
invertible 1x1 convolution (``torch.linalg.qr`` of a random matrix, ``torch.linalg.lu``
factors kept as buffers and parameters: ``w_p``, ``u_mask = torch.triu(ones, 1)``,
``l_mask = u_mask.T``, ``s_sign``, ``w_s = logabs(w_s)``, the weight rebuilt as
``w_p @ (w_l * l_mask + l_eye) @ ((w_u * u_mask) + torch.diag(s_sign * torch.exp(w_s)))``
and applied by ``F.conv2d(input, weight.unsqueeze(2).unsqueeze(3))``); the affine coupling
(``chunk(2, 1)``, ``F.sigmoid(log_s + 2)``, zero-initialised ``ZeroConv2d`` with
``F.pad(value=1)`` and a learned ``exp(scale * 3)``); squeeze by ``view``/``permute``; a
learned prior from a ``ZeroConv2d``; ``gaussian_log_p``; the bits-per-dimension loss with
dequantisation noise ``torch.rand_like(image) / n_bins``; the first batch only initialises
ActNorm, under ``torch.no_grad()``. Adam with a warm-up learning rate
set in ``param_groups``, ``clip_grad_norm_``. Returns every loss term, gradient and
parameter, and the reconstruction error of ``reverse``.
"""

from __future__ import annotations

import argparse
from math import log, pi

import torch
import torch.nn as nn
import torch.nn.functional as F

logabs = lambda x: torch.log(torch.abs(x))  # noqa: E731


class ActNorm(nn.Module):
    def __init__(self, in_channel):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, in_channel, 1, 1))
        self.scale = nn.Parameter(torch.ones(1, in_channel, 1, 1))
        self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))

    def initialize(self, input):
        with torch.no_grad():
            flatten = input.permute(1, 0, 2, 3).contiguous().view(input.shape[1], -1)
            mean = flatten.mean(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3)
            std = flatten.std(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3)
            self.loc.data.copy_(-mean)
            self.scale.data.copy_(1 / (std + 1e-6))

    def forward(self, input):
        _, _, height, width = input.shape
        if self.initialized.item() == 0:
            self.initialize(input)
            self.initialized.fill_(1)
        log_abs = logabs(self.scale)
        logdet = height * width * torch.sum(log_abs)
        return self.scale * (input + self.loc), logdet

    def reverse(self, output):
        return output / self.scale - self.loc


class InvConv2dLU(nn.Module):
    def __init__(self, in_channel):
        super().__init__()
        weight = torch.randn(in_channel, in_channel)
        q, _ = torch.linalg.qr(weight)
        w_p, w_l, w_u = torch.linalg.lu(q)
        w_s = torch.diag(w_u)
        w_u = torch.triu(w_u, 1)
        u_mask = torch.triu(torch.ones_like(w_u), 1)
        l_mask = u_mask.T

        self.register_buffer("w_p", w_p)
        self.register_buffer("u_mask", u_mask)
        self.register_buffer("l_mask", l_mask)
        self.register_buffer("s_sign", torch.sign(w_s))
        self.register_buffer("l_eye", torch.eye(l_mask.shape[0]))
        self.w_l = nn.Parameter(w_l)
        self.w_s = nn.Parameter(logabs(w_s))
        self.w_u = nn.Parameter(w_u)

    def calc_weight(self):
        weight = (
            self.w_p
            @ (self.w_l * self.l_mask + self.l_eye)
            @ ((self.w_u * self.u_mask) + torch.diag(self.s_sign * torch.exp(self.w_s)))
        )
        return weight.unsqueeze(2).unsqueeze(3)

    def forward(self, input):
        _, _, height, width = input.shape
        out = F.conv2d(input, self.calc_weight())
        logdet = height * width * torch.sum(self.w_s)
        return out, logdet

    def reverse(self, output):
        weight = self.calc_weight()
        return F.conv2d(output, weight.squeeze().inverse().unsqueeze(2).unsqueeze(3))


class ZeroConv2d(nn.Module):
    def __init__(self, in_channel, out_channel):
        super().__init__()
        self.conv = nn.Conv2d(in_channel, out_channel, 3, padding=0)
        self.conv.weight.data.zero_()
        self.conv.bias.data.zero_()
        self.scale = nn.Parameter(torch.zeros(1, out_channel, 1, 1))

    def forward(self, input):
        out = F.pad(input, [1, 1, 1, 1], value=1)
        out = self.conv(out)
        return out * torch.exp(self.scale * 3)


class AffineCoupling(nn.Module):
    def __init__(self, in_channel, filter_size=8):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_channel // 2, filter_size, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(filter_size, filter_size, 1),
            nn.ReLU(inplace=True),
            ZeroConv2d(filter_size, in_channel),
        )
        self.net[0].weight.data.normal_(0, 0.05)
        self.net[0].bias.data.zero_()
        self.net[2].weight.data.normal_(0, 0.05)
        self.net[2].bias.data.zero_()

    def forward(self, input):
        in_a, in_b = input.chunk(2, 1)
        log_s, t = self.net(in_a).chunk(2, 1)
        s = F.sigmoid(log_s + 2)
        out_b = (in_b + t) * s
        logdet = torch.sum(torch.log(s).view(input.shape[0], -1), 1)
        return torch.cat([in_a, out_b], 1), logdet

    def reverse(self, output):
        out_a, out_b = output.chunk(2, 1)
        log_s, t = self.net(out_a).chunk(2, 1)
        s = F.sigmoid(log_s + 2)
        return torch.cat([out_a, out_b / s - t], 1)


class Flow(nn.Module):
    def __init__(self, in_channel):
        super().__init__()
        self.actnorm = ActNorm(in_channel)
        self.invconv = InvConv2dLU(in_channel)
        self.coupling = AffineCoupling(in_channel)

    def forward(self, input):
        out, logdet = self.actnorm(input)
        out, det1 = self.invconv(out)
        out, det2 = self.coupling(out)
        logdet = logdet + det1
        if det2 is not None:
            logdet = logdet + det2
        return out, logdet

    def reverse(self, output):
        input = self.coupling.reverse(output)
        input = self.invconv.reverse(input)
        return self.actnorm.reverse(input)


def gaussian_log_p(x, mean, log_sd):
    return -0.5 * log(2 * pi) - log_sd - 0.5 * (x - mean) ** 2 / torch.exp(2 * log_sd)


class Block(nn.Module):
    def __init__(self, in_channel, n_flow):
        super().__init__()
        squeeze_dim = in_channel * 4
        self.flows = nn.ModuleList([Flow(squeeze_dim) for _ in range(n_flow)])
        self.prior = ZeroConv2d(in_channel * 4, in_channel * 8)

    def forward(self, input):
        b_size, n_channel, height, width = input.shape
        squeezed = input.view(b_size, n_channel, height // 2, 2, width // 2, 2)
        squeezed = squeezed.permute(0, 1, 3, 5, 2, 4)
        out = squeezed.contiguous().view(b_size, n_channel * 4, height // 2, width // 2)
        logdet = 0
        for flow in self.flows:
            out, det = flow(out)
            logdet = logdet + det
        zero = torch.zeros_like(out)
        mean, log_sd = self.prior(zero).chunk(2, 1)
        log_p = gaussian_log_p(out, mean, log_sd)
        log_p = log_p.view(b_size, -1).sum(1)
        return out, logdet, log_p

    def reverse(self, out):
        for flow in self.flows[::-1]:
            out = flow.reverse(out)
        b_size, n_channel, height, width = out.shape
        unsqueezed = out.view(b_size, n_channel // 4, 2, 2, height, width)
        unsqueezed = unsqueezed.permute(0, 1, 4, 2, 5, 3)
        return unsqueezed.contiguous().view(b_size, n_channel // 4, height * 2, width * 2)


def calc_loss(log_p, logdet, image_size, n_bins, n_channel=2):
    n_pixel = image_size * image_size * n_channel
    loss = -log(n_bins) * n_pixel
    loss = loss + logdet + log_p
    return (
        (-loss / (log(2) * n_pixel)).mean(),
        (log_p / (log(2) * n_pixel)).mean(),
        (logdet / (log(2) * n_pixel)).mean(),
    )


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:6].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:6].tolist() + [p.grad.abs().sum().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
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
    model = Block(2, n_flow=2)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    n_bits, image_size, lr = 5, 4, 1e-2
    n_bins = 2.0**n_bits
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    out = []
    for i in range(args.steps):
        image = torch.rand(4, 2, image_size, image_size)
        image = image * 255
        image = torch.floor(image / 2 ** (8 - n_bits))
        image = image / n_bins - 0.5
        if i == 0:
            # ActNorm's data-dependent initialisation sees a batch of its own, as in train.py
            with torch.no_grad():
                model(image + torch.rand_like(image) / n_bins)
                continue
        z, logdet, log_p = model(image + torch.rand_like(image) / n_bins)
        logdet = logdet.mean()
        loss, log_p, log_det = calc_loss(log_p, logdet, image_size, n_bins)
        model.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        warmup_lr = lr * min(1, i / 2)
        optimizer.param_groups[0]["lr"] = warmup_lr
        optimizer.step()
        out += [loss.item(), log_p.item(), log_det.item(), norm.item()] + values(model)
    with torch.no_grad():
        z, _, _ = model(image)
        back = model.reverse(z)
    return out + [float((back - image).abs().max() < 1e-8)] + z.flatten()[:16].tolist()


if __name__ == "__main__":
    main()
