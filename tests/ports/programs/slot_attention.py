"""An object-centric autoencoder with Slot Attention (Locatello et al.), in float64, as the
usual single-file implementations write it: a CNN encoder with a soft position embedding
(``torch.meshgrid(..., indexing="ij")`` of ``linspace`` grids), slots drawn as
``mu + log_sigma.exp() * randn``, attention normalised over the slots (``softmax(dim=1)``)
then turned into a weighted mean over inputs, a ``GRUCell`` on the flattened slots and a
residual MLP under ``LayerNorm``; a spatial broadcast decoder (``repeat`` over the grid),
alpha masks by a softmax over the slots and the reconstruction by their weighted sum; Adam
with a warm-up ``LambdaLR`` and ``clip_grad_norm_``. Returns the losses, the masks' sums
and the attention of the last iteration.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def build_grid(resolution):
    ranges = [torch.linspace(0.0, 1.0, steps=r) for r in resolution]
    grid = torch.meshgrid(*ranges, indexing="ij")
    grid = torch.stack(grid, dim=-1)
    grid = torch.reshape(grid, [resolution[0], resolution[1], -1])
    grid = grid.unsqueeze(0)
    return torch.cat([grid, 1.0 - grid], dim=-1)


class SoftPositionEmbed(nn.Module):
    def __init__(self, hidden_size, resolution):
        super().__init__()
        self.embedding = nn.Linear(4, hidden_size, bias=True)
        self.register_buffer("grid", build_grid(resolution), persistent=False)

    def forward(self, inputs):
        return inputs + self.embedding(self.grid)


class SlotAttention(nn.Module):
    def __init__(self, num_slots, dim, iters=2, eps=1e-8, hidden_dim=16):
        super().__init__()
        self.num_slots, self.iters, self.eps = num_slots, iters, eps
        self.scale = dim**-0.5
        self.slots_mu = nn.Parameter(torch.randn(1, 1, dim))
        self.slots_log_sigma = nn.Parameter(torch.zeros(1, 1, dim))
        nn.init.xavier_uniform_(self.slots_log_sigma)
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(dim, dim, bias=False)
        self.to_v = nn.Linear(dim, dim, bias=False)
        self.gru = nn.GRUCell(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden_dim), nn.ReLU(inplace=True),
                                 nn.Linear(hidden_dim, dim))  # fmt: skip
        self.norm_input = nn.LayerNorm(dim)
        self.norm_slots = nn.LayerNorm(dim)
        self.norm_pre_ff = nn.LayerNorm(dim)

    def forward(self, inputs):
        b, n, d = inputs.shape
        mu = self.slots_mu.expand(b, self.num_slots, -1)
        sigma = self.slots_log_sigma.exp().expand(b, self.num_slots, -1)
        slots = mu + sigma * torch.randn(mu.shape)
        inputs = self.norm_input(inputs)
        k, v = self.to_k(inputs), self.to_v(inputs)
        for _ in range(self.iters):
            slots_prev = slots
            slots = self.norm_slots(slots)
            q = self.to_q(slots)
            dots = torch.einsum("bid,bjd->bij", q, k) * self.scale
            attn = dots.softmax(dim=1) + self.eps
            attn_weights = attn / attn.sum(dim=-1, keepdim=True)
            updates = torch.einsum("bjd,bij->bid", v, attn_weights)
            slots = self.gru(updates.reshape(-1, d), slots_prev.reshape(-1, d))
            slots = slots.reshape(b, -1, d)
            slots = slots + self.mlp(self.norm_pre_ff(slots))
        return slots, attn


class SlotAutoEncoder(nn.Module):
    def __init__(self, resolution=(6, 6), num_slots=3, dim=8):
        super().__init__()
        self.resolution = resolution
        self.encoder = nn.Sequential(nn.Conv2d(3, dim, 3, padding=1), nn.ReLU(),
                                     nn.Conv2d(dim, dim, 3, padding=1), nn.ReLU())  # fmt: skip
        self.encoder_pos = SoftPositionEmbed(dim, resolution)
        self.fc = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.slot_attention = SlotAttention(num_slots, dim)
        self.decoder_pos = SoftPositionEmbed(dim, resolution)
        self.decoder = nn.Sequential(nn.Conv2d(dim, dim, 1), nn.ReLU(), nn.Conv2d(dim, 4, 1))

    def forward(self, image):
        x = self.encoder(image).permute(0, 2, 3, 1)
        x = self.encoder_pos(x)
        x = self.fc(torch.flatten(x, 1, 2))
        slots, attn = self.slot_attention(x)
        b, k, d = slots.shape
        x = slots.reshape(-1, d)[:, None, None, :].repeat(1, *self.resolution, 1)
        x = self.decoder_pos(x).permute(0, 3, 1, 2)
        x = self.decoder(x)
        x = x.reshape(b, k, 4, *self.resolution)
        recons, masks = x.split([3, 1], dim=2)
        masks = F.softmax(masks, dim=1)
        recon_combined = torch.sum(recons * masks, dim=1)
        return recon_combined, recons, masks, slots, attn


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
    model = SlotAutoEncoder()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=4e-3)
    warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 2))
    out = []
    for _ in range(args.steps):
        image = torch.rand(2, 3, 6, 6)
        optimizer.zero_grad()
        recon, recons, masks, slots, attn = model(image)
        loss = F.mse_loss(recon, image)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        warmup.step()
        out += [loss.item(), norm.item(), warmup.get_last_lr()[0]]
    out += masks.sum(dim=1).flatten()[:4].tolist() + attn[0, :, :4].flatten().tolist()
    out += [len(model.state_dict()), model.slot_attention.gru.weight_hh.grad.abs().sum().item()]
    return out
