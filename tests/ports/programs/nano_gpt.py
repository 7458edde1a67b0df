"""A character-level GPT trained in the style of nanoGPT's ``model.py`` and ``train.py``.

The model: token and position embeddings in an ``nn.ModuleDict``, pre-norm blocks with a
LayerNorm that may have no bias (``F.layer_norm`` over a module's own parameters), causal
self-attention either through ``F.scaled_dot_product_attention(is_causal=True)`` or by hand
with a registered ``tril`` buffer and ``masked_fill(-inf)``, weight tying between the token
embedding and the head, ``self.apply(_init_weights)`` plus the scaled init of residual
projections found by ``named_parameters``. The loop: ``get_batch`` by ``torch.randint``
windows, AdamW with decay/no-decay groups by ``p.dim()`` and a ``fused`` check through
``inspect.signature``, warmup + cosine learning rate written into ``param_groups``, gradient
accumulation through a disabled ``torch.amp.GradScaler`` (``scale``, ``unscale_``, ``step``,
``update``), ``clip_grad_norm_``, ``zero_grad(set_to_none=True)``, ``@torch.no_grad()`` loss
estimates, a whole checkpoint (model, optimizer, model args, counters, config) saved and
resumed into a fresh model with the ``_orig_mod.`` prefix stripped, ``crop_block_size``, and
top-k sampling with ``torch.topk``, ``logits[logits < v[:, [-1]]] = -inf`` and
``torch.multinomial``.
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import tempfile
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (PyTorch's has no bias=False before 2.1)."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        self.flash = config.flash and hasattr(torch.nn.functional, "scaled_dot_product_attention")
        if not self.flash:
            mask = torch.tril(torch.ones(config.block_size, config.block_size))
            self.register_buffer("bias", mask.view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True
            )
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


@dataclass
class GPTConfig:
    block_size: int = 16
    vocab_size: int = 12
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 16
    dropout: float = 0.0
    bias: bool = True
    flash: bool = True


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias),
            )
        )
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def get_num_params(self, non_embedding=True):
        n_params = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n_params -= self.transformer.wpe.weight.numel()
        return n_params

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.config.block_size, f"sequence of {t} > block size"
        pos = torch.arange(0, t, dtype=torch.long, device=device)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(
                logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1
            )
        else:
            logits = self.lm_head(x[:, [-1], :])  # only the last position
            loss = None
        return logits, loss

    def crop_block_size(self, block_size):
        assert block_size <= self.config.block_size
        self.config.block_size = block_size
        self.transformer.wpe.weight = nn.Parameter(self.transformer.wpe.weight[:block_size])
        for block in self.transformer.h:
            if hasattr(block.attn, "bias"):
                block.attn.bias = block.attn.bias[:, :, :block_size, :block_size]

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        param_dict = {pn: p for pn, p in self.named_parameters()}
        param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and device_type == "cuda"
        extra_args = dict(fused=True) if use_fused else dict()
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = (
                idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size :]
            )
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def make_text(rng, n):
    """Digits of a noisy counting sequence: learnable, not trivial."""
    out, value = [], 0
    for _ in range(n):
        value = (value + 1 + (rng.random() < 0.1)) % 10
        out.append(value)
    return np.asarray(out, dtype=np.int64)


def main(argv=None):
    parser = argparse.ArgumentParser(description="nanoGPT-style character model")
    parser.add_argument("--iters", type=int, default=8)
    parser.add_argument("--resume-iters", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--grad-accum", type=int, default=2)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--manual-attention", action="store_true")
    parser.add_argument("--no-bias", action="store_true")
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--top-k", type=int, default=4)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(1337)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = "cpu"
    device_type = "cuda" if "cuda" in device else "cpu"
    ctx = nullcontext()  # nanoGPT: autocast only off the CPU
    data = torch.from_numpy(make_text(np.random.default_rng(0), 600))
    train_data, val_data = data[:500], data[500:]

    def get_batch(split):
        source = train_data if split == "train" else val_data
        ix = torch.randint(len(source) - args.block_size, (args.batch_size,))
        x = torch.stack([source[i : i + args.block_size] for i in ix])
        y = torch.stack([source[i + 1 : i + 1 + args.block_size] for i in ix])
        return x.to(device), y.to(device)

    model_args = dict(
        block_size=args.block_size,
        vocab_size=10,
        n_layer=2,
        n_head=2,
        n_embd=16,
        dropout=args.dropout,
        bias=not args.no_bias,
        flash=not args.manual_attention,
    )
    model = GPT(GPTConfig(**model_args))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    model.to(device)
    assert model.get_num_params() < model.get_num_params(non_embedding=False)

    scaler = torch.amp.GradScaler("cuda", enabled=False)
    optimizer = model.configure_optimizers(0.1, args.lr, (0.9, 0.95), device_type)

    warmup_iters, lr_decay_iters, min_lr = 2, args.iters + args.resume_iters, args.lr / 10

    def get_lr(it):
        if it < warmup_iters:
            return args.lr * (it + 1) / (warmup_iters + 1)
        if it > lr_decay_iters:
            return min_lr
        decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
        return min_lr + coeff * (args.lr - min_lr)

    @torch.no_grad()
    def estimate_loss(model):
        out = {}
        model.eval()
        for split in ["train", "val"]:
            losses = torch.zeros(3)
            for k in range(3):
                X, Y = get_batch(split)
                with ctx:
                    _, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean()
        model.train()
        return out

    losses = []

    def train(model, optimizer, iter_num, until):
        X, Y = get_batch("train")
        while iter_num < until:
            lr = get_lr(iter_num)
            for param_group in optimizer.param_groups:
                param_group["lr"] = lr
            for _ in range(args.grad_accum):
                with ctx:
                    _, loss = model(X, Y)
                    loss = loss / args.grad_accum
                X, Y = get_batch("train")
                scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item() * args.grad_accum)
            iter_num += 1
        return iter_num

    iter_num = train(model, optimizer, 0, args.iters)
    estimate = estimate_loss(model)
    losses += [estimate["train"].item(), estimate["val"].item()]
    best_val_loss = estimate["val"].item()

    # Save a whole checkpoint the way nanoGPT does, then resume into a fresh model whose
    # state dict came from a compiled one (the "_orig_mod." prefix).
    checkpoint = {
        "model": {"_orig_mod." + k: v for k, v in model.state_dict().items()},
        "optimizer": optimizer.state_dict(),
        "model_args": model_args,
        "iter_num": iter_num,
        "best_val_loss": best_val_loss,
        "config": {"lr": args.lr, "grad_accum": args.grad_accum, "name": "ports"},
    }
    with tempfile.TemporaryDirectory() as out_dir:
        ckpt_path = os.path.join(out_dir, "ckpt.pt")
        torch.save(checkpoint, ckpt_path)
        checkpoint = torch.load(ckpt_path, map_location=device)
    resumed = GPT(GPTConfig(**checkpoint["model_args"]))
    state_dict = checkpoint["model"]
    unwanted_prefix = "_orig_mod."
    for k in list(state_dict.keys()):
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix) :]] = state_dict.pop(k)
    resumed.load_state_dict(state_dict)
    optimizer = resumed.configure_optimizers(0.1, args.lr, (0.9, 0.95), device_type)
    optimizer.load_state_dict(checkpoint["optimizer"])
    assert checkpoint["config"]["name"] == "ports"
    iter_num = train(resumed, optimizer, checkpoint["iter_num"], args.iters + args.resume_iters)
    losses.append(float(iter_num))

    resumed.eval()
    resumed.crop_block_size(args.block_size // 2)
    start = torch.zeros((2, 1), dtype=torch.long, device=device)
    sample = resumed.generate(start, 6, temperature=0.8, top_k=args.top_k)
    losses += [float(t) for t in sample.flatten().tolist()]
    X, Y = get_batch("val")
    half = args.block_size // 2
    _, loss = resumed(X[:, :half].contiguous(), Y[:, :half].contiguous())
    losses.append(loss.item())
    return losses


if __name__ == "__main__":
    main()
