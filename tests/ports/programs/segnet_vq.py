"""A SegNet-style encoder-decoder with a vector-quantised bottleneck (VQ-VAE with EMA codebook
updates), on small synthetic images, in float64.

SegNet's parts: ``MaxPool2d(return_indices=True)`` and ``MaxUnpool2d`` with the saved indices,
convolutions with ``padding_mode`` reflect/replicate/circular, ``ConvTranspose2d`` with
``groups``, ``dilation`` and ``output_padding``, ``InstanceNorm2d(affine=True)``, ``Mish`` and
``Hardswish``; a 3-D side branch (``Conv3d``, ``BatchNorm3d``, ``AvgPool3d``,
``ConvTranspose3d``, trilinear ``interpolate``). The VQ-VAE's parts: ``torch.cdist`` and
``argmin`` codes, the straight-through estimator ``z + (q - z).detach()``, the commitment loss,
EMA codebook buffers updated in place under ``no_grad`` (``one_hot``, ``mul_``, ``add_``,
``.data.copy_``), ``pixel_unshuffle``/``pixel_shuffle``. Loss: cross entropy with class weights
plus a soft Dice; NAdam; the state dict round-trips through ``torch.save``/``torch.load`` on a
buffer mid-training. Returns every loss and every parameter's and gradient's values.
"""

from __future__ import annotations

import argparse
import io

import torch
import torch.nn as nn
import torch.nn.functional as F


class VectorQuantizerEMA(nn.Module):
    def __init__(self, num_codes, dim, decay=0.9, eps=1e-5):
        super().__init__()
        self.decay, self.eps = decay, eps
        self.register_buffer("codebook", torch.randn(num_codes, dim))
        self.register_buffer("cluster_size", torch.zeros(num_codes))
        self.register_buffer("embed_avg", self.codebook.clone())

    def forward(self, z):
        # z: (N, C, H, W) -> rows of C
        flat = z.permute(0, 2, 3, 1).reshape(-1, z.shape[1])
        codes = torch.cdist(flat, self.codebook).argmin(dim=1)
        q = self.codebook[codes].view(z.shape[0], z.shape[2], z.shape[3], -1).permute(0, 3, 1, 2)
        if self.training:
            with torch.no_grad():
                onehot = F.one_hot(codes, self.codebook.shape[0]).type(flat.dtype)
                self.cluster_size.mul_(self.decay).add_(onehot.sum(0), alpha=1 - self.decay)
                self.embed_avg.mul_(self.decay).add_(onehot.t() @ flat, alpha=1 - self.decay)
                n = self.cluster_size.sum()
                size = (self.cluster_size + self.eps) / (n + self.codebook.shape[0] * self.eps) * n
                self.codebook.data.copy_(self.embed_avg / size.unsqueeze(1))
        commitment = F.mse_loss(z, q.detach())
        return z + (q - z).detach(), commitment, codes


class SegNetVQ(nn.Module):
    def __init__(self, classes=3, width=4, codes=6):
        super().__init__()
        self.enc1 = nn.Conv2d(1, width, 3, padding=1, padding_mode="reflect")
        self.norm1 = nn.InstanceNorm2d(width, affine=True)
        self.enc2 = nn.Conv2d(width, 2 * width, 3, padding=1, padding_mode="circular")
        self.pool = nn.MaxPool2d(2, 2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2, 2)
        self.vq = VectorQuantizerEMA(codes, 8 * width)
        self.up = nn.ConvTranspose2d(2 * width, 2 * width, 3, stride=2, padding=1,
                                     output_padding=1, groups=2, dilation=1)  # fmt: skip
        self.dil = nn.ConvTranspose2d(2 * width, width, 3, padding=2, dilation=2)
        self.dec = nn.Conv2d(2 * width, classes, 3, padding=1, padding_mode="replicate")
        self.vol = nn.Sequential(
            nn.Conv3d(1, 2, 3, padding=1), nn.BatchNorm3d(2), nn.Hardswish(),
            nn.AvgPool3d(2), nn.ConvTranspose3d(2, classes, 2, stride=2),
        )  # fmt: skip

    def forward(self, x):
        h = F.mish(self.norm1(self.enc1(x)))
        h, idx1 = self.pool(h)
        skip = h
        h = F.hardswish(self.enc2(h))
        z = F.pixel_unshuffle(h, 2)
        q, commitment, codes = self.vq(z)
        h = F.pixel_shuffle(q, 2)
        h = self.up(h)[:, :, ::2, ::2]
        h = self.dil(h)
        h = torch.cat([self.unpool(h, idx1), F.interpolate(skip, scale_factor=2.0)], dim=1)
        # a volume made of the image stack's channels, through the 3-D branch
        vol = self.vol(x.unsqueeze(1).expand(-1, 1, 4, -1, -1).contiguous())
        vol = F.interpolate(vol, size=(2, 8, 8), mode="trilinear", align_corners=False)
        logits = self.dec(h) + vol.mean(2)
        return logits, commitment, codes


def dice_loss(logits, target, classes):
    probs = logits.softmax(1)
    onehot = F.one_hot(target, classes).permute(0, 3, 1, 2).type_as(probs)
    inter = (probs * onehot).sum((0, 2, 3))
    union = probs.sum((0, 2, 3)) + onehot.sum((0, 2, 3))
    return 1 - ((2 * inter + 1) / (union + 1)).mean()


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:12].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:12].tolist() + [p.grad.abs().sum().item()]
    for b in model.buffers():
        out.append(b.double().sum().item())
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
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
    classes = 3
    model = SegNetVQ(classes)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.NAdam(model.parameters(), lr=0.01, weight_decay=1e-3)
    weight = torch.tensor([0.5, 1.0, 2.0])
    out = []
    for step in range(args.steps):
        x = torch.randn(2, 1, 8, 8)
        target = (x[:, 0] > 0.5).long() + (x[:, 0] > 1.0).long()
        model.train()
        logits, commitment, codes = model(x)
        loss = F.cross_entropy(logits, target, weight=weight) + dice_loss(logits, target, classes)
        loss = loss + 0.25 * commitment
        optimizer.zero_grad()
        loss.backward()
        out += [loss.item(), commitment.item()] + codes.double().tolist() + values(model)
        optimizer.step()
        if step == 1:
            buffer = io.BytesIO()
            torch.save(model.state_dict(), buffer)
            buffer.seek(0)
            model.load_state_dict(torch.load(buffer))
    model.eval()
    with torch.no_grad():
        logits, _, _ = model(torch.randn(2, 1, 8, 8))
    out += logits.flatten().tolist()
    return out


if __name__ == "__main__":
    main()
