"""LoRA fine-tuning, in the style of the common from-scratch LoRA tutorials (and minLoRA/PEFT).

A small "pretrained" model (token embedding, two residual MLP blocks with LayerNorm, a
classifier) is frozen with ``requires_grad_(False)``; every ``nn.Linear`` whose name matches a
target, found by ``named_modules()``, is replaced on its parent with ``setattr`` by a wrapper
that adds low-rank ``lora_A`` / ``lora_B`` parameters (``kaiming_uniform_`` and zeros) scaled
by ``alpha / r``, with dropout on the LoRA path. The optimizer gets only
``filter(lambda p: p.requires_grad, model.parameters())``; the trainable parameters are
counted, saved as a state dict of only the ``lora_`` keys (``torch.save`` to a buffer) and
loaded back into a fresh wrapped model with ``strict=False``; finally the LoRA weights are
merged into the base weights under ``torch.no_grad()`` and the wrappers swapped back out,
and the merged model gives the same outputs. The data are synthetic sequences.
"""

from __future__ import annotations

import argparse
import copy
import io
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class TinyModel(nn.Module):
    def __init__(self, vocab, dim, hidden, classes):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([Block(dim, hidden) for _ in range(2)])
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean(dim=1))


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r=4, alpha=8, dropout=0.1):
        super().__init__()
        self.base = base
        self.r = r
        self.scaling = alpha / r
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r))
        self.lora_dropout = nn.Dropout(dropout)
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))

    def forward(self, x):
        result = self.base(x)
        lora = self.lora_dropout(x) @ self.lora_A.T @ self.lora_B.T
        return result + lora * self.scaling

    @torch.no_grad()
    def merged(self) -> nn.Linear:
        self.base.weight.data += (self.lora_B @ self.lora_A) * self.scaling
        return self.base


def apply_lora(model, targets, r, alpha):
    for name, module in list(model.named_modules()):
        if isinstance(module, nn.Linear) and any(name.endswith(t) for t in targets):
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, child, LoRALinear(module, r=r, alpha=alpha))
    return model


def merge_lora(model):
    for name, module in list(model.named_modules()):
        if isinstance(module, LoRALinear):
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, child, module.merged())
    return model


def lora_state_dict(model):
    return {k: v for k, v in model.state_dict().items() if "lora_" in k}


def make_data(rng, count, length, vocab, classes):
    tokens = rng.integers(0, vocab, size=(count, length))
    labels = (tokens[:, 0] + tokens[:, -1]) % classes
    return torch.from_numpy(tokens), torch.from_numpy(labels)


def main(argv=None):
    parser = argparse.ArgumentParser(description="LoRA fine-tuning")
    parser.add_argument("--vocab", type=int, default=20)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--length", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--rank", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=8.0)
    parser.add_argument("--lr", type=float, default=2e-2)
    parser.add_argument("--targets", nargs="+", default=["up", "down"])
    parser.add_argument("--train-head", action="store_true")
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    tokens, labels = make_data(
        rng, args.steps * args.batch_size, args.length, args.vocab, args.classes
    )

    model = TinyModel(args.vocab, args.dim, args.hidden, args.classes)
    model.requires_grad_(False)
    apply_lora(model, args.targets, args.rank, args.alpha)
    if args.train_head:
        model.head.weight.requires_grad = True
        model.head.bias.requires_grad_(True)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    fresh = copy.deepcopy(model)  # the base weights, LoRA as initialised

    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    print(f"trainable params: {trainable} || all params: {total} || {100 * trainable / total:.2f}%")
    optimizer = torch.optim.AdamW(filter(lambda p: p.requires_grad, model.parameters()), lr=args.lr)

    losses = [float(trainable), float(total)]
    model.train()
    for step in range(args.steps):
        xb = tokens[step * args.batch_size : (step + 1) * args.batch_size]
        yb = labels[step * args.batch_size : (step + 1) * args.batch_size]
        loss = F.cross_entropy(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    frozen = [n for n, p in model.named_parameters() if not p.requires_grad and p.grad is not None]
    assert not frozen, f"frozen parameters got gradients: {frozen}"

    # save only the adapter, load it into the fresh copy
    buffer = io.BytesIO()
    adapter = lora_state_dict(model)
    if args.train_head:
        adapter.update({k: v for k, v in model.state_dict().items() if k.startswith("head.")})
    torch.save(adapter, buffer)
    buffer.seek(0)
    result = fresh.load_state_dict(torch.load(buffer), strict=False)
    losses += [
        float(len(adapter)),
        float(len(result.missing_keys)),
        float(len(result.unexpected_keys)),
    ]

    model.eval()
    fresh.eval()
    with torch.no_grad():
        before = model(tokens)
        reloaded = fresh(tokens)
        merged = merge_lora(fresh)
        after = merged(tokens)
    assert not any(isinstance(m, LoRALinear) for m in merged.modules())
    losses += [
        F.cross_entropy(before, labels).item(),
        (reloaded - before).abs().max().item(),
        (after - before).abs().max().item(),
        after.softmax(-1)[:, 0].mean().item(),
        float(sum(p.numel() for p in merged.parameters())),
    ]
    return losses


if __name__ == "__main__":
    main()
