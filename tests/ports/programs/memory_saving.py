"""Memory-saving and gradient-inspection tricks from training scripts (after the PyTorch
tutorial "Hooks for autograd saved tensors" and activation-offloading / compression recipes),
on a small MLP-mixer-like network, in float64.

``torch.autograd.graph.saved_tensors_hooks`` that move what autograd saves out to NumPy
(``pack``: ``t.detach().cpu().numpy()``; ``unpack``: ``torch.from_numpy``) and count the
packed bytes, a pair that stores saved tensors in a Python dict by id (the tutorial's
"saving to disk" pattern, in memory), ``save_on_cpu``; ``disable_saved_tensors_hooks`` around
a section; ``Tensor.register_hook`` that clips a gradient and ``retain_grad()`` on an
intermediate; ``grad_fn.register_prehook`` and ``grad_fn.register_hook``;
``torch.autograd.graph.register_multi_grad_hook`` over several tensors (``mode="all"`` and
``"any"``); a per-layer gradient-norm log from ``register_post_accumulate_grad_hook``; RMSprop
with ``centered=True`` and Rprop. Returns losses, gradients and counts.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd.graph import (
    register_multi_grad_hook,
    save_on_cpu,
    saved_tensors_hooks,
)


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.token_mix = nn.Sequential(nn.Linear(tokens, 8), nn.GELU(), nn.Linear(8, tokens))
        self.channel_mix = nn.Sequential(nn.Linear(dim, 8), nn.GELU(), nn.Linear(8, dim))

    def forward(self, x):
        x = x + self.token_mix(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mix(self.norm2(x))


class Mixer(nn.Module):
    def __init__(self, tokens=4, dim=6, classes=3):
        super().__init__()
        self.blocks = nn.Sequential(MixerBlock(tokens, dim), MixerBlock(tokens, dim))
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.blocks(x).mean(1))


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
    model = Mixer()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    x = torch.randn(5, 4, 6)
    y = torch.randint(0, 3, (5,))
    out = []
    packed_bytes, storage = [], {}

    def pack_to_numpy(t):
        packed_bytes.append(t.numel() * t.element_size())
        return t.detach().cpu().numpy().copy()

    def unpack_from_numpy(array):
        return torch.from_numpy(array)

    def pack_to_store(t):
        key = len(storage)
        storage[key] = t.detach().clone()
        return key

    def unpack_from_store(key):
        return storage[key]

    norms = {}
    for name, p in model.named_parameters():
        p.register_post_accumulate_grad_hook(
            lambda p, name=name: norms.__setitem__(name, p.grad.norm().item())
        )
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-2, centered=True, momentum=0.5)
    for step in range(args.steps):
        opt.zero_grad()
        if step == 0:
            with saved_tensors_hooks(pack_to_numpy, unpack_from_numpy):
                logits = model(x)
        elif step == 1:
            with saved_tensors_hooks(pack_to_store, unpack_from_store):
                logits = model(x)
        else:
            with save_on_cpu(pin_memory=False):
                logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        out += [loss.item(), float(len(norms)), norms["head.weight"], norms["blocks.0.norm1.bias"]]
    out += [float(len(packed_bytes) > 0), float(len(storage) > 0)]

    # gradient inspection on one more forward
    fired, any_fired = [], []
    h = model.blocks[0](x)
    h.retain_grad()
    h.register_hook(lambda g: g.clamp(-0.01, 0.01))
    logits = model.head(model.blocks[1](h).mean(1))
    grad_in = []
    logits.grad_fn.register_prehook(lambda grads: (grads[0] * 2,))
    logits.grad_fn.register_hook(lambda gi, go: grad_in.append(go[0].abs().sum().item()))
    w, b = model.head.weight, model.head.bias
    register_multi_grad_hook((w, b), lambda grads: fired.append(sum(g.sum() for g in grads)))
    register_multi_grad_hook((w, b), lambda g: any_fired.append(g.sum()), mode="any")
    model.zero_grad()
    F.cross_entropy(logits, y).backward()
    out += [h.grad.abs().sum().item(), h.grad.abs().max().item()] + grad_in
    out += [float(len(fired)), fired[0].item(), float(len(any_fired)), any_fired[0].item()]
    out += [model.blocks[0].token_mix[0].weight.grad.abs().sum().item()]
    opt2 = torch.optim.Rprop(model.parameters(), lr=0.01, etas=(0.4, 1.3), step_sizes=(1e-4, 1))
    for _ in range(2):
        opt2.zero_grad()
        with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt2.step()
        out.append(loss.item())
    out += [p.detach().abs().sum().item() for p in model.parameters()]
    return out


if __name__ == "__main__":
    main()
