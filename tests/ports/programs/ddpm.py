"""A tiny denoising diffusion model (DDPM), in the style of the common single-file tutorials.

A linear beta schedule (``torch.linspace``, ``torch.cumprod``), timesteps drawn by
``torch.randint`` and schedule values gathered for them, a sinusoidal timestep embedding, a
small conv UNet-ish net (GroupNorm + SiLU residual blocks, a strided down and a nearest up
path with a skip), the MSE on the predicted noise, an EMA copy of the model (``copy.deepcopy``)
updated under ``torch.no_grad`` with ``torch._foreach_lerp_``, with diffusers'
``torch._foreach_sub_(ema, torch._foreach_sub(ema, params), alpha=1 - decay)``, or with
``p.data.mul_(decay).add_(q.data, alpha=1 - decay)``, and a few ancestral sampling steps
with the EMA model. The data are small synthetic blobs, so the run needs no download.
"""

from __future__ import annotations

import argparse
import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoidal_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / (half - 1))
    args = t.float()[:, None] * freqs[None, :]
    return torch.cat([torch.sin(args), torch.cos(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, in_ch, out_ch, t_dim, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, in_ch)
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, padding=1)
        self.t_proj = nn.Linear(t_dim, out_ch)
        self.norm2 = nn.GroupNorm(groups, out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1)
        self.skip = nn.Conv2d(in_ch, out_ch, 1) if in_ch != out_ch else nn.Identity()

    def forward(self, x, t_emb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.t_proj(t_emb)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return h + self.skip(x)


class TinyUNet(nn.Module):
    def __init__(self, channels=1, base=8, t_dim=16, groups=4):
        super().__init__()
        self.t_dim = t_dim
        self.time_mlp = nn.Sequential(
            nn.Linear(t_dim, t_dim * 2), nn.SiLU(), nn.Linear(t_dim * 2, t_dim)
        )
        self.inc = nn.Conv2d(channels, base, 3, padding=1)
        self.down1 = ResBlock(base, base, t_dim, groups)
        self.downsample = nn.Conv2d(base, base * 2, 3, stride=2, padding=1)
        self.mid = ResBlock(base * 2, base * 2, t_dim, groups)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.up1 = ResBlock(base * 3, base, t_dim, groups)
        self.out_norm = nn.GroupNorm(groups, base)
        self.outc = nn.Conv2d(base, channels, 3, padding=1)

    def forward(self, x, t):
        t_emb = self.time_mlp(sinusoidal_embedding(t, self.t_dim))
        h0 = self.down1(self.inc(x), t_emb)
        h = self.mid(self.downsample(h0), t_emb)
        h = self.up1(torch.cat([self.up(h), h0], dim=1), t_emb)
        return self.outc(F.silu(self.out_norm(h)))


class Diffusion:
    def __init__(self, timesteps, beta_start=1e-4, beta_end=0.02):
        self.timesteps = timesteps
        self.betas = torch.linspace(beta_start, beta_end, timesteps)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)
        self.sqrt_alphas_cumprod = torch.sqrt(self.alphas_cumprod)
        self.sqrt_one_minus_alphas_cumprod = torch.sqrt(1.0 - self.alphas_cumprod)

    @staticmethod
    def extract(values, t, shape):
        out = values.gather(-1, t)
        return out.reshape(t.shape[0], *((1,) * (len(shape) - 1)))

    def q_sample(self, x0, t, noise):
        return (
            self.extract(self.sqrt_alphas_cumprod, t, x0.shape) * x0
            + self.extract(self.sqrt_one_minus_alphas_cumprod, t, x0.shape) * noise
        )

    @torch.no_grad()
    def p_sample(self, model, x, t_index):
        t = torch.full((x.shape[0],), t_index, dtype=torch.long)
        beta = self.extract(self.betas, t, x.shape)
        alpha = self.extract(self.alphas, t, x.shape)
        sqrt_one_minus = self.extract(self.sqrt_one_minus_alphas_cumprod, t, x.shape)
        mean = (x - beta / sqrt_one_minus * model(x, t)) / torch.sqrt(alpha)
        if t_index == 0:
            return mean
        return mean + torch.sqrt(beta) * torch.randn_like(x)


def blobs(rng, count, size):
    """``count`` images (N, 1, size, size) in [-1, 1]: one Gaussian blob each."""
    yy, xx = np.mgrid[0:size, 0:size]
    centers = rng.uniform(2, size - 2, size=(count, 2))
    d2 = (yy[None] - centers[:, 0, None, None]) ** 2 + (xx[None] - centers[:, 1, None, None]) ** 2
    return (2.0 * np.exp(-d2 / 6.0) - 1.0)[:, None].astype(np.float32)


@torch.no_grad()
def update_ema(ema_model, model, decay, style):
    if style == "foreach":
        ema_params = list(ema_model.parameters())
        params = list(model.parameters())
        torch._foreach_lerp_(ema_params, params, 1.0 - decay)
    elif style == "foreach-sub":
        # diffusers' EMAModel: s -= (1 - decay) * (s - p), over the lists at once
        ema_params = list(ema_model.parameters())
        params = list(model.parameters())
        torch._foreach_sub_(ema_params, torch._foreach_sub(ema_params, params), alpha=1.0 - decay)
    else:
        for ema_p, p in zip(ema_model.parameters(), model.parameters()):
            ema_p.data.mul_(decay).add_(p.data, alpha=1.0 - decay)


def main(argv=None):
    parser = argparse.ArgumentParser(description="tiny DDPM")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--timesteps", type=int, default=50)
    parser.add_argument("--sample-steps", type=int, default=3)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--ema-decay", type=float, default=0.9)
    parser.add_argument("--ema", choices=["foreach", "foreach-sub", "data"], default="foreach")
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    data = torch.from_numpy(blobs(rng, args.steps * args.batch_size, args.size))
    model = TinyUNet()
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    ema_model = copy.deepcopy(model)
    ema_model.requires_grad_(False)
    diffusion = Diffusion(args.timesteps)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)

    losses = []
    model.train()
    for step in range(args.steps):
        x0 = data[step * args.batch_size : (step + 1) * args.batch_size]
        t = torch.randint(0, args.timesteps, (x0.shape[0],), dtype=torch.long)
        noise = torch.randn_like(x0)
        x_t = diffusion.q_sample(x0, t, noise)
        loss = F.mse_loss(model(x_t, t), noise)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        update_ema(ema_model, model, args.ema_decay, args.ema)
        losses.append(loss.item())

    ema_model.eval()
    x = torch.randn(4, 1, args.size, args.size)
    for i in reversed(range(args.sample_steps)):
        x = diffusion.p_sample(ema_model, x, i)
    x = x.clamp(-1.0, 1.0)
    gap = sum((p - q).abs().sum() for p, q in zip(model.parameters(), ema_model.parameters()))
    return [*losses, x.mean().item(), x.std().item(), gap.item()]


if __name__ == "__main__":
    main()
