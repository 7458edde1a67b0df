"""A spiking neural network trained with surrogate gradients (after snnTorch's tutorials and
Zenke & Ganguli's SuperSpike / "SpyTorch" notebooks), in float64.

The spike is a ``torch.autograd.Function``: a Heaviside step forward, the fast-sigmoid
surrogate ``grad / (slope * |u| + 1) ** 2`` backward from the membrane potential it saved.
Leaky integrate-and-fire neurons (``beta`` decay, reset by subtraction of the detached spike)
are stepped in a Python loop over time; the input is rate coded (``torch.rand(...) < p``
cast to the default dtype), the spikes and membranes are recorded with ``torch.stack``, and
the loss is cross-entropy on the output spike counts plus a membrane-at-the-wrong-class
penalty and a firing-rate regulariser. Adam, ``clip_grad_norm_``. Returns the losses, spike
counts and a few gradients.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class SurrogateSpike(torch.autograd.Function):
    slope = 25.0

    @staticmethod
    def forward(ctx, mem):
        ctx.save_for_backward(mem)
        return (mem > 0).to(mem.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        (mem,) = ctx.saved_tensors
        return grad_output / (SurrogateSpike.slope * mem.abs() + 1.0) ** 2


spike_fn = SurrogateSpike.apply


class LIF(nn.Module):
    def __init__(self, n_in, n_out, beta=0.9, threshold=1.0):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        self.beta = beta
        self.threshold = threshold

    def forward(self, x, mem):
        mem = self.beta * mem + self.fc(x)
        spk = spike_fn(mem - self.threshold)
        # reset by subtraction; the reset does not carry gradient (snnTorch's default)
        mem = mem - spk.detach() * self.threshold
        return spk, mem


class SNN(nn.Module):
    def __init__(self, n_in=12, n_hidden=16, n_out=3):
        super().__init__()
        self.lif1 = LIF(n_in, n_hidden)
        self.lif2 = LIF(n_hidden, n_out, beta=0.8)

    def forward(self, spikes_in):
        batch = spikes_in.shape[1]
        mem1 = torch.zeros(batch, self.lif1.fc.out_features)
        mem2 = torch.zeros(batch, self.lif2.fc.out_features)
        spk_rec, mem_rec, hidden = [], [], []
        for step in range(spikes_in.shape[0]):
            spk1, mem1 = self.lif1(spikes_in[step], mem1)
            spk2, mem2 = self.lif2(spk1, mem2)
            hidden.append(spk1)
            spk_rec.append(spk2)
            mem_rec.append(mem2)
        return torch.stack(spk_rec), torch.stack(mem_rec), torch.stack(hidden)


def rate_code(rates, steps):
    return (torch.rand(steps, *rates.shape) < rates).to(torch.get_default_dtype())


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--time", type=int, default=8)
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
    net = SNN()
    with torch.no_grad():
        for lif in (net.lif1, net.lif2):
            lif.fc.weight.mul_(3.0)
    if args.init:
        net.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(net.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(net.parameters(), lr=5e-3, betas=(0.9, 0.999))
    prototypes = torch.rand(3, 12)
    out = []
    for _ in range(args.steps):
        labels = torch.randint(0, 3, (6,))
        spikes = rate_code(prototypes[labels], args.time)
        spk_rec, mem_rec, hidden = net(spikes)
        counts = spk_rec.sum(dim=0)
        loss = F.cross_entropy(counts, labels)
        wrong = F.one_hot(labels, 3).logical_not()
        loss = loss + 0.1 * mem_rec.clamp(min=0).mul(wrong).pow(2).mean()
        loss = loss + 1e-3 * hidden.mean(dim=(0, 1)).pow(2).sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(net.parameters(), max_norm=5.0)
        optimizer.step()
        accuracy = (counts.argmax(dim=1) == labels).double().mean()
        out += [loss.item(), norm.item(), accuracy.item(), hidden.sum().item()]
    out += net.lif1.fc.weight.grad[0, :4].tolist() + net.lif2.fc.bias.grad.tolist()
    out += counts.flatten().tolist()
    return out
