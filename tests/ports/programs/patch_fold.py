"""Patch-based models written with ``unfold``/``fold`` (after the PyTorch forum's "convolution
by unfold" recipe, patch-based image denoisers that average overlapping patches, and Dauphin
et al.'s gated convolutional language model), in float64.

A convolution computed as ``F.unfold`` + ``matmul`` + ``view``, checked against ``F.conv2d``
and trained; a denoiser that encodes every overlapping patch (``nn.Unfold`` with stride and
padding), decodes it, and puts the image back with ``nn.Fold`` divided by the fold of ones
(the overlap count); ``nn.ZeroPad2d`` with asymmetric padding; ``Tensor.unfold`` framing of a
1-D signal into overlapping windows and the overlap-add back by ``F.fold`` over a (1, L)
image; a 1-D autoencoder whose decoder is ``nn.ConvTranspose1d`` (stride, padding,
``output_padding``) after ``nn.Unflatten``; the gated CNN LM with ``F.pad`` causal padding,
``nn.GLU(dim=1)`` in residual blocks; Adam and RMSprop.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class UnfoldConv(nn.Module):
    def __init__(self, c_in, c_out, k):
        super().__init__()
        self.k = k
        self.weight = nn.Parameter(torch.randn(c_out, c_in, k, k) * 0.2)
        self.bias = nn.Parameter(torch.zeros(c_out))

    def forward(self, x):
        n, _, h, w = x.shape
        cols = F.unfold(x, kernel_size=self.k, padding=1, stride=1)
        out = self.weight.view(self.weight.size(0), -1) @ cols + self.bias[:, None]
        return out.view(n, -1, h, w)


class PatchDenoiser(nn.Module):
    def __init__(self, c=1, p=4, stride=2, size=8):
        super().__init__()
        self.unfold = nn.Unfold(kernel_size=p, stride=stride, padding=1)
        self.fold = nn.Fold(output_size=(size, size), kernel_size=p, stride=stride, padding=1)
        self.pad = nn.ZeroPad2d((1, 0, 0, 1))
        d = c * p * p
        self.net = nn.Sequential(nn.Linear(d, 6), nn.Tanh(), nn.Linear(6, d))

    def forward(self, x):
        patches = self.unfold(x).transpose(1, 2)
        cleaned = self.net(patches).transpose(1, 2)
        count = self.fold(self.unfold(torch.ones_like(x)))
        return self.fold(cleaned) / count, self.pad(x)


class SignalAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv1d(1, 4, 5, stride=2, padding=2), nn.ELU(), nn.Flatten(), nn.Linear(4 * 8, 6)
        )
        self.dec = nn.Sequential(
            nn.Linear(6, 4 * 8),
            nn.Unflatten(1, (4, 8)),
            nn.ConvTranspose1d(4, 1, 5, stride=2, padding=2, output_padding=1),
        )

    def forward(self, x):
        return self.dec(self.enc(x))


class GatedCNN(nn.Module):
    def __init__(self, vocab=10, d=8, k=3, layers=2):
        super().__init__()
        self.k = k
        self.embed = nn.Embedding(vocab, d)
        self.convs = nn.ModuleList(nn.Conv1d(d, 2 * d, k) for _ in range(layers))
        self.glu = nn.GLU(dim=1)
        self.out = nn.Linear(d, vocab)

    def forward(self, tokens):
        h = self.embed(tokens).transpose(1, 2)
        for conv in self.convs:
            h = h + self.glu(conv(F.pad(h, (self.k - 1, 0))))
        return self.out(h.transpose(1, 2))


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
    models = {
        "conv": UnfoldConv(2, 3, 3),
        "denoise": PatchDenoiser(),
        "ae": SignalAE(),
        "lm": GatedCNN(),
    }
    if args.init:
        state = torch.load(args.init)
        for k, m in models.items():
            m.load_state_dict(state[k])
    if args.save_init:
        torch.save({k: m.state_dict() for k, m in models.items()}, args.save_init)
    out = []
    params = [p for m in models.values() for p in m.parameters()]
    opt = torch.optim.Adam(params[:4], lr=1e-2)
    opt2 = torch.optim.RMSprop(params[4:], lr=1e-3)
    img = torch.randn(2, 2, 6, 6)
    clean = torch.randn(3, 1, 8, 8).cumsum(-1) * 0.3
    noisy = clean + 0.2 * torch.randn(3, 1, 8, 8)
    t = torch.linspace(0, 6.0, 16)
    signal = torch.sin(t * torch.tensor([[1.0], [2.0], [3.0]]))
    tokens = torch.randint(0, 10, (4, 7))
    for _ in range(args.steps):
        opt.zero_grad()
        opt2.zero_grad()
        conv = models["conv"]
        got = conv(img)
        ref = F.conv2d(img, conv.weight, conv.bias, padding=1)
        l1 = got.pow(2).mean()
        den, padded = models["denoise"](noisy)
        l2 = F.mse_loss(den, clean)
        frames = signal.unfold(-1, 4, 2)
        ola = F.fold(frames.transpose(1, 2), output_size=(1, 16), kernel_size=(1, 4), stride=(1, 2))
        recon = models["ae"](signal.unsqueeze(1))
        l3 = F.mse_loss(recon, signal.unsqueeze(1))
        logits = models["lm"](tokens[:, :-1])
        l4 = F.cross_entropy(logits.reshape(-1, 10), tokens[:, 1:].reshape(-1))
        loss = l1 + l2 + l3 + l4
        loss.backward()
        opt.step()
        opt2.step()
        out += [loss.item(), l1.item(), l2.item(), l3.item(), l4.item()]
        out += [(got - ref).abs().max().item(), padded.sum().item(), float(padded.shape[-1])]
        out += ola[0, 0, 0, :6].tolist() + [float(frames.shape[1])]
    out += [p.grad.abs().sum().item() for p in params]
    return out


if __name__ == "__main__":
    main()
