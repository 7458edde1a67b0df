"""Autoregressive density models on binarised 5x5 images, in float64, as Karpathy's pytorch-made
and the PixelCNN tutorials write them: MADE's ``MaskedLinear`` (a ``register_buffer`` mask
set by ``set_mask`` from ``numpy`` connectivity, ``F.linear(input, self.mask * self.weight,
self.bias)``), connectivity drawn with ``np.random.RandomState``, order resampling between
steps; PixelCNN's ``MaskedConv2d`` (an ``nn.Conv2d`` subclass whose mask of type 'A'/'B' is
a buffer filled by slice assignment and applied by ``self.weight.data *= self.mask``);
``F.binary_cross_entropy_with_logits(reduction="sum")`` per image, RMSprop for one and Adam
for the other, and pixel-by-pixel sampling in ``no_grad`` by ``torch.rand(...) < p``.
Returns the losses, the samples and the masks' sums.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SIDE = 5
D = SIDE * SIDE


class MaskedLinear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, bias)
        self.register_buffer("mask", torch.ones(out_features, in_features))

    def set_mask(self, mask):
        self.mask.data.copy_(torch.from_numpy(mask.astype(np.uint8).T))

    def forward(self, input):
        return F.linear(input, self.mask * self.weight, self.bias)


class MADE(nn.Module):
    def __init__(self, nin, hidden_sizes, nout, num_masks=2):
        super().__init__()
        self.nin, self.nout, self.hidden_sizes = nin, nout, hidden_sizes
        layers = []
        hs = [nin] + hidden_sizes + [nout]
        for h0, h1 in zip(hs, hs[1:]):
            layers.extend([MaskedLinear(h0, h1), nn.ReLU()])
        layers.pop()
        self.net = nn.Sequential(*layers)
        self.num_masks, self.seed, self.m = num_masks, 0, {}
        self.update_masks()

    def update_masks(self):
        L = len(self.hidden_sizes)
        rng = np.random.RandomState(self.seed)
        self.seed = (self.seed + 1) % self.num_masks
        self.m[-1] = rng.permutation(self.nin)
        for layer in range(L):
            self.m[layer] = rng.randint(self.m[layer - 1].min(), self.nin - 1,
                                        size=self.hidden_sizes[layer])  # fmt: skip
        masks = [self.m[layer - 1][:, None] <= self.m[layer][None, :] for layer in range(L)]
        masks.append(self.m[L - 1][:, None] < self.m[-1][None, :])
        layers = [mod for mod in self.net.modules() if isinstance(mod, MaskedLinear)]
        for layer, mask in zip(layers, masks):
            layer.set_mask(mask)

    def forward(self, x):
        return self.net(x)


class MaskedConv2d(nn.Conv2d):
    def __init__(self, mask_type, *args, **kwargs):
        super().__init__(*args, **kwargs)
        assert mask_type in {"A", "B"}
        self.register_buffer("mask", self.weight.data.clone())
        _, _, kh, kw = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kh // 2, kw // 2 + (mask_type == "B") :] = 0
        self.mask[:, :, kh // 2 + 1 :] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super().forward(x)


def pixelcnn(fm=6):
    return nn.Sequential(
        MaskedConv2d("A", 1, fm, 5, 1, 2, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
        MaskedConv2d("B", fm, fm, 3, 1, 1, bias=False), nn.BatchNorm2d(fm), nn.ReLU(True),
        nn.Conv2d(fm, 1, 1),
    )  # fmt: skip


def make_images(n):
    stripes = (torch.arange(SIDE) % 2).double().expand(SIDE, SIDE)
    base = torch.where(torch.rand(n, 1, 1) < 0.5, stripes, stripes.T)
    flips = (torch.rand(n, SIDE, SIDE) < 0.1).double()
    return (base + flips) % 2


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
    made, cnn = MADE(D, [20], D), pixelcnn()
    if args.init:
        state = torch.load(args.init)
        made.load_state_dict(state["made"])
        cnn.load_state_dict(state["cnn"])
    if args.save_init:
        torch.save({"made": made.state_dict(), "cnn": cnn.state_dict()}, args.save_init)
    made_opt = torch.optim.RMSprop(made.parameters(), lr=1e-2)
    cnn_opt = torch.optim.Adam(cnn.parameters(), lr=1e-2)
    out = []
    for _ in range(args.steps):
        images = make_images(4)
        made.update_masks()
        logits = made(images.view(4, -1))
        made_loss = F.binary_cross_entropy_with_logits(logits, images.view(4, -1),
                                                       reduction="sum") / 4  # fmt: skip
        made_opt.zero_grad()
        made_loss.backward()
        made_opt.step()
        pixels = images.unsqueeze(1)
        cnn_loss = F.binary_cross_entropy_with_logits(cnn(pixels), pixels, reduction="sum") / 4
        cnn_opt.zero_grad()
        cnn_loss.backward()
        cnn_opt.step()
        out += [made_loss.item(), cnn_loss.item()]
    cnn.eval()
    sample = torch.zeros(1, 1, SIDE, SIDE)
    with torch.no_grad():
        for i in range(SIDE):
            for j in range(SIDE):
                p = torch.sigmoid(cnn(sample))[:, :, i, j]
                sample[:, :, i, j] = (torch.rand(p.shape) < p).double()
    out += sample.flatten().tolist()
    masks = [mod.mask.sum().item() for mod in made.modules() if isinstance(mod, MaskedLinear)]
    out += masks + [cnn[0].mask.sum().item(), cnn[3].mask.sum().item()]
    out += cnn[0].weight.grad.flatten()[:5].tolist() + made.net[0].weight.grad.sum(1)[:5].tolist()
    return out
