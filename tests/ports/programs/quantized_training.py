"""Quantization-aware training and int8 inference written by hand (after the "QAT from
scratch" tutorials and LLM.int8-style absmax quantizers, which do not use ``torch.ao``), on a
small MLP, in float32 and integer dtypes.

Per-channel weight scales from ``torch.aminmax(dim=1)`` and ``torch.finfo(torch.float32).eps``,
activation ranges tracked by an observer buffer updated with ``lerp_`` under ``no_grad``;
fake quantization ``torch.clamp(torch.round(x / s) + z, qmin, qmax)`` (half-to-even) from
``torch.iinfo(torch.int8)``, the straight-through estimator ``x + (q - x).detach()``; after
training the weights stored as ``.to(torch.int8)`` (and checked to round-trip), the
activations quantized to ``torch.uint8``, an integer matmul accumulated in ``torch.int32``
with the zero-point corrections, then dequantized; a ``.half()`` copy of the model for
float16 storage and its ``.float()`` round trip; integer arithmetic edge cases a kernel
writer meets (``//`` and ``%`` of negative int32, ``>>`` shifts, ``bitwise_and``, int8 casts
of out-of-range floats after clamping).
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

QMIN, QMAX = torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max


def fake_quant(x, scale, zero, qmin, qmax):
    q = (torch.clamp(torch.round(x / scale) + zero, qmin, qmax) - zero) * scale
    return x + (q - x).detach()


def weight_scale(w):
    lo, hi = torch.aminmax(w.detach(), dim=1)
    amax = torch.maximum(lo.abs(), hi.abs())
    return (amax / QMAX).clamp(min=torch.finfo(torch.float32).eps).unsqueeze(1)


class QLinear(nn.Linear):
    def __init__(self, d_in, d_out):
        super().__init__(d_in, d_out)
        self.register_buffer("act_range", torch.tensor([-1.0, 1.0]))

    def act_qparams(self):
        lo, hi = self.act_range[0].clamp(max=0), self.act_range[1].clamp(min=0)
        scale = (hi - lo) / 255
        zero = torch.round(-lo / scale)
        return scale, zero

    def forward(self, x):
        if self.training:
            with torch.no_grad():
                seen = torch.stack([x.min(), x.max()])
                self.act_range.lerp_(seen, 0.1)
        scale, zero = self.act_qparams()
        xq = fake_quant(x, scale, zero, 0, 255)
        wq = fake_quant(self.weight, weight_scale(self.weight), 0.0, QMIN, QMAX)
        return F.linear(xq, wq, self.bias)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = QLinear(6, 12), QLinear(12, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def int8_linear(layer, x):
    """The deployed layer: uint8 activations, int8 weights, int32 accumulation."""
    scale_x, zero_x = layer.act_qparams()
    xq = torch.clamp(torch.round(x / scale_x) + zero_x, 0, 255).to(torch.uint8)
    scale_w = weight_scale(layer.weight)
    wq = torch.clamp(torch.round(layer.weight / scale_w), QMIN, QMAX).to(torch.int8)
    acc = torch.matmul(xq.to(torch.int32), wq.to(torch.int32).t())
    acc = acc - zero_x.to(torch.int32) * wq.to(torch.int32).sum(1)
    return acc.float() * (scale_x * scale_w.t()) + layer.bias, xq, wq


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    model = Net()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    x = torch.randn(32, 6)
    y = (x[:, :3] * 2).argmax(1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    out = []
    for _ in range(args.steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        out += [loss.item()] + model.fc1.act_range.tolist() + model.fc2.act_range.tolist()
    model.eval()
    with torch.no_grad():
        h, xq, wq = int8_linear(model.fc1, x)
        h = F.relu(h)
        logits, hq, _ = int8_linear(model.fc2, h)
        fake = model(x)
    out += [(logits - fake).abs().max().item(), logits.sum().item()]
    out += [float(xq.dtype == torch.uint8), float(wq.dtype == torch.int8)]
    out += xq[0].double().tolist() + wq[0].double().tolist() + hq[1].double().tolist()
    w = model.fc1.weight.detach()
    out += [float((wq.float() * weight_scale(w) - w).abs().max())]
    half = Net()
    half.load_state_dict(model.state_dict())
    half = half.half()
    out += [float(half.fc1.weight.dtype == torch.float16)]
    back = half.fc1.weight.float()
    out += [(back - w).abs().max().item()] + back[0, :4].tolist()
    a = torch.tensor([-7, -1, 0, 5, 130, -129], dtype=torch.int32)
    out += (a // 3).double().tolist() + (a % 3).double().tolist() + (a >> 1).double().tolist()
    out += torch.bitwise_and(a, 0xF).double().tolist()
    out += torch.clamp(a.float() * 1.5, -128, 127).to(torch.int8).double().tolist()
    out += (torch.tensor([2.5, -2.5, 0.5, 1.5]).round()).tolist()
    out += torch.round(torch.tensor([1.2345, -7.65]), decimals=2).tolist()
    return out


if __name__ == "__main__":
    main()
