"""A Neural Turing Machine on the copy task (after loudinthecloud/pytorch-ntm and the NTM
re-implementations that follow Graves et al. 2014), in float64.

The memory is a ``(batch, N, M)`` tensor re-initialised each sequence from a buffer drawn by
``nn.init.uniform_``. A head's addressing: content weights from ``F.cosine_similarity`` between
its key and every memory row (``unsqueeze``/``expand_as``), sharpened by ``softplus(beta)`` and
``softmax``, interpolated with the previous weights by a ``sigmoid`` gate, shifted by a
circular convolution of a ``softmax`` shift kernel (``torch.cat`` wrap-around, one ``F.conv1d``
with ``groups`` = batch), sharpened by ``w ** gamma`` over its sum. The write head erases
(outer products as ``matmul`` of ``unsqueeze``-d weights and vectors) then adds. An LSTMCell
controller, a delimiter channel, ``binary_cross_entropy_with_logits``, RMSprop(momentum) and
``clip_grad_value_``. Returns the losses, bit errors and the last read weights.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def circular_convolution(w, s):
    """Rotates each row of ``w`` by its 3-tap kernel ``s`` (shifts -1, 0, +1): one grouped
    convolution over the batch, each row wrapped around by ``torch.cat``."""
    wrapped = torch.cat([w[:, -1:], w, w[:, :1]], dim=1)
    return F.conv1d(wrapped.unsqueeze(0), s.flip(1).unsqueeze(1), groups=w.size(0)).squeeze(0)


class Head(nn.Module):
    def __init__(self, controller_size, M):
        super().__init__()
        self.M = M
        # key, beta, gate, 3 shifts, gamma
        self.fc = nn.Linear(controller_size, M + 1 + 1 + 3 + 1)

    def address(self, h, memory, w_prev):
        k, beta, g, s, gamma = torch.split(self.fc(h), [self.M, 1, 1, 3, 1], dim=1)
        beta, g = F.softplus(beta), torch.sigmoid(g)
        s, gamma = F.softmax(s, dim=1), 1 + F.softplus(gamma)
        similarity = F.cosine_similarity(memory + 1e-16, k.unsqueeze(1).expand_as(memory), dim=-1)
        wc = F.softmax(beta * similarity, dim=1)
        wg = g * wc + (1 - g) * w_prev
        w = circular_convolution(wg, s) ** gamma
        return w / (w.sum(dim=1, keepdim=True) + 1e-16)


class WriteHead(Head):
    def __init__(self, controller_size, M):
        super().__init__(controller_size, M)
        self.erase_add = nn.Linear(controller_size, 2 * M)

    def forward(self, h, memory, w_prev):
        w = self.address(h, memory, w_prev)
        e, a = self.erase_add(h).chunk(2, dim=1)
        erase = torch.matmul(w.unsqueeze(-1), torch.sigmoid(e).unsqueeze(1))
        add = torch.matmul(w.unsqueeze(-1), a.unsqueeze(1))
        return memory * (1 - erase) + add, w


class ReadHead(Head):
    def forward(self, h, memory, w_prev):
        w = self.address(h, memory, w_prev)
        return torch.bmm(w.unsqueeze(1), memory).squeeze(1), w


class NTM(nn.Module):
    def __init__(self, bits=4, controller_size=20, N=8, M=6):
        super().__init__()
        self.N, self.M = N, M
        self.controller = nn.LSTMCell(bits + 1 + M, controller_size)
        self.read_head = ReadHead(controller_size, M)
        self.write_head = WriteHead(controller_size, M)
        self.out = nn.Linear(controller_size + M, bits)
        self.register_buffer("mem_bias", torch.empty(N, M))
        stdev = 1 / (N + M) ** 0.5
        nn.init.uniform_(self.mem_bias, -stdev, stdev)

    def init_sequence(self, batch):
        self.memory = self.mem_bias.clone().repeat(batch, 1, 1)
        size = self.controller.hidden_size
        self.state = (torch.zeros(batch, size), torch.zeros(batch, size))
        self.read = torch.zeros(batch, self.M)
        self.w_read = torch.zeros(batch, self.N)
        self.w_write = torch.zeros(batch, self.N)

    def forward(self, x):
        h, c = self.controller(torch.cat([x, self.read], dim=1), self.state)
        self.state = (h, c)
        self.memory, self.w_write = self.write_head(h, self.memory, self.w_write)
        self.read, self.w_read = self.read_head(h, self.memory, self.w_read)
        return self.out(torch.cat([h, self.read], dim=1))


def copy_batch(batch, length, bits):
    seq = (torch.rand(length, batch, bits) < 0.5).double()
    inp = torch.zeros(length + 1, batch, bits + 1)
    inp[:length, :, :bits] = seq
    inp[length, :, bits] = 1.0  # delimiter
    return inp, seq


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--length", type=int, default=2)
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
    bits, batch = 4, 2
    net = NTM(bits=bits)
    if args.init:
        net.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(net.state_dict(), args.save_init)
    optimizer = torch.optim.RMSprop(net.parameters(), lr=1e-3, momentum=0.9, alpha=0.95)
    out = []
    for _ in range(args.steps):
        inp, target = copy_batch(batch, args.length, bits)
        net.init_sequence(batch)
        for t in range(inp.size(0)):
            net(inp[t])
        outputs = torch.stack([net(torch.zeros(batch, bits + 1)) for _ in range(args.length)])
        loss = F.binary_cross_entropy_with_logits(outputs, target)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_value_(net.parameters(), 10.0)
        optimizer.step()
        errors = (torch.sigmoid(outputs.detach()).round() != target).sum()
        out += [loss.item(), errors.item(), net.memory.detach().abs().sum().item()]
    out += net.w_read.detach().flatten().tolist() + net.w_write.detach().flatten().tolist()
    out += net.read_head.fc.weight.grad[:2, :3].flatten().tolist()
    return out
