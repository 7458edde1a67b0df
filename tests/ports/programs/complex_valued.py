"""A complex-valued network for signals (after the complexPyTorch package and the
"Deep Complex Networks" layers people re-implement without it), classifying noisy phase-coded
tones and reconstructing them, in complex128 / float64.

Inputs made by ``torch.complex(re, im)`` and ``torch.view_as_complex``; ``ComplexLinear``
with a ``torch.cdouble`` ``nn.Parameter`` and ``x @ W.T`` (complex matmul) plus a complex
bias; the ``modReLU`` activation written with ``torch.polar(F.relu(z.abs() + b), z.angle())``
and the cardioid ``0.5 * (1 + torch.cos(z.angle())) * z``; a complex "batch norm" by the
complex mean and ``z.abs().square().mean()``; ``z.conj()``, ``torch.sgn``, ``z.real`` /
``z.imag`` and ``torch.view_as_real`` in the losses (cross entropy on magnitudes, an MSE on
the real/imaginary pairs, a phase term by ``torch.angle``); ``torch.vdot``; Adam and SGD
with momentum on complex parameters (the conjugate-Wirtinger gradients they step with);
``clip_grad_norm_`` over complex gradients.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class ComplexLinear(nn.Module):
    def __init__(self, d_in, d_out, bias=True):
        super().__init__()
        scale = (1.0 / d_in) ** 0.5
        self.weight = nn.Parameter(torch.randn(d_out, d_in, dtype=torch.cdouble) * scale)
        self.bias = nn.Parameter(torch.zeros(d_out, dtype=torch.cdouble)) if bias else None

    def forward(self, z):
        out = z @ self.weight.T
        return out if self.bias is None else out + self.bias


class ModReLU(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.b = nn.Parameter(torch.full((d,), -0.1))

    def forward(self, z):
        return torch.polar(F.relu(z.abs() + self.b), z.angle())


def cardioid(z):
    return 0.5 * (1 + torch.cos(z.angle())) * z


def complex_norm(z, eps=1e-5):
    centered = z - z.mean(0, keepdim=True)
    return centered / torch.sqrt(centered.abs().square().mean(0, keepdim=True) + eps)


class ComplexNet(nn.Module):
    def __init__(self, d=8, hidden=10, classes=3):
        super().__init__()
        self.fc1 = ComplexLinear(d, hidden, bias=False)  # the norm removes a bias
        self.act = ModReLU(hidden)
        self.fc2 = ComplexLinear(hidden, hidden)
        self.head = ComplexLinear(hidden, classes)
        self.decode = ComplexLinear(hidden, d)

    def forward(self, z):
        h = self.act(complex_norm(self.fc1(z)))
        h = cardioid(self.fc2(h))
        return self.head(h).abs(), self.decode(h)


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
    models = {"adam": ComplexNet(), "sgd": ComplexNet()}
    if args.init:
        state = torch.load(args.init)
        for k, m in models.items():
            m.load_state_dict(state[k])
    if args.save_init:
        torch.save({k: m.state_dict() for k, m in models.items()}, args.save_init)
    n, d = 12, 8
    labels = torch.arange(n) % 3
    t = torch.arange(d, dtype=torch.float64)
    phase = labels[:, None] * 2.0 + 0.3 * t
    clean = torch.complex(torch.cos(phase), torch.sin(phase))
    noise = torch.view_as_complex(0.2 * torch.randn(n, d, 2))
    z = clean + noise
    out = []
    optimizers = {
        "adam": torch.optim.Adam(models["adam"].parameters(), lr=1e-2),
        "sgd": torch.optim.SGD(models["sgd"].parameters(), lr=0.05, momentum=0.9),
    }
    for name, model in models.items():
        opt = optimizers[name]
        for _ in range(args.steps):
            opt.zero_grad()
            logits, recon = model(z)
            ce = F.cross_entropy(logits, labels)
            mse = F.mse_loss(torch.view_as_real(recon), torch.view_as_real(clean))
            phase_err = (1 - torch.cos(torch.angle(recon) - torch.angle(clean))).mean()
            align = torch.vdot(recon.flatten(), clean.flatten()).abs() / recon.numel()
            loss = ce + mse + 0.1 * phase_err - 0.01 * align
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            out += [loss.item(), ce.item(), mse.item(), phase_err.item(), align.item()]
            out.append(norm.item())
        w = model.fc1.weight
        out += torch.view_as_real(w.grad).flatten()[:6].tolist()
        out += [w.real.sum().item(), w.imag.sum().item(), w.conj().imag.sum().item()]
        out += torch.sgn(model.head.bias.detach()).real.tolist()
        out += [p.detach().abs().sum().item() for p in model.parameters()]
    return out


if __name__ == "__main__":
    main()
