"""A minimal Mamba (selective state-space) language model, after johnma2006/mamba-minimal:
``in_proj`` split with ``Tensor.split``, a depthwise causal ``Conv1d`` (``groups=d_inner``,
``padding=d_conv - 1``, cut back to the sequence length), ``F.silu`` gates, the input-dependent
``delta, B, C`` from ``x_proj`` and ``F.softplus(dt_proj(...))``, ``A = -torch.exp(A_log)``,
discretisation with ``torch.einsum`` and the sequential selective scan (a Python loop and
``torch.stack``), a hand-written RMSNorm, tied input/output embeddings, and AdamW with
``clip_grad_norm_``. (``einops.rearrange`` of the original is written with ``transpose``.)

The corpus is a short repeated text, encoded per character.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TEXT = "the quick brown fox jumps over the lazy dog. " * 8


class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MambaBlock(nn.Module):
    def __init__(self, d_model, d_state=8, expand=2, d_conv=4):
        super().__init__()
        self.d_inner = expand * d_model
        self.dt_rank = math.ceil(d_model / 16)
        self.d_state = d_state
        self.in_proj = nn.Linear(d_model, self.d_inner * 2, bias=False)
        self.conv1d = nn.Conv1d(self.d_inner, self.d_inner, kernel_size=d_conv, bias=True,
                                groups=self.d_inner, padding=d_conv - 1)  # fmt: skip
        # x_proj takes in `x` and outputs the input-specific delta, B, C
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + d_state * 2, bias=False)
        # dt_proj projects delta from dt_rank to d_in
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner, bias=True)
        A = torch.arange(1, d_state + 1).float().repeat(self.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(self.d_inner))
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=False)

    def forward(self, x):
        (b, seqlen, d) = x.shape
        x_and_res = self.in_proj(x)  # shape (b, seqlen, 2 * d_in)
        (x, res) = x_and_res.split(split_size=[self.d_inner, self.d_inner], dim=-1)

        x = x.transpose(1, 2)  # rearrange(x, 'b l d_in -> b d_in l')
        x = self.conv1d(x)[:, :, :seqlen]
        x = x.transpose(1, 2)  # rearrange(x, 'b d_in l -> b l d_in')
        x = F.silu(x)

        y = self.ssm(x)
        y = y * F.silu(res)
        return self.out_proj(y)

    def ssm(self, x):
        (d_in, n) = self.A_log.shape
        A = -torch.exp(self.A_log.float())  # shape (d_in, n)
        D = self.D.float()
        x_dbl = self.x_proj(x)  # (b, seqlen, dt_rank + 2*n)
        (delta, B, C) = x_dbl.split(split_size=[self.dt_rank, n, n], dim=-1)
        delta = F.softplus(self.dt_proj(delta))  # (b, seqlen, d_in)
        return self.selective_scan(x, delta, A, B, C, D)

    def selective_scan(self, u, delta, A, B, C, D):
        (b, seqlen, d_in) = u.shape
        n = A.shape[1]
        # Discretize continuous parameters (A, B)
        deltaA = torch.exp(torch.einsum("bld,dn->bldn", delta, A))
        deltaB_u = torch.einsum("bld,bln,bld->bldn", delta, B, u)
        # Perform selective scan (a sequential loop, as in the reference implementation)
        x = torch.zeros((b, d_in, n), device=deltaA.device)
        ys = []
        for i in range(seqlen):
            x = deltaA[:, i] * x + deltaB_u[:, i]
            y = torch.einsum("bdn,bn->bd", x, C[:, i, :])
            ys.append(y)
        y = torch.stack(ys, dim=1)  # shape (b, seqlen, d_in)
        return y + u * D


class ResidualBlock(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.mixer = MambaBlock(d_model)
        self.norm = RMSNorm(d_model)

    def forward(self, x):
        return self.mixer(self.norm(x)) + x


class Mamba(nn.Module):
    def __init__(self, vocab_size, d_model, n_layer):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList([ResidualBlock(d_model) for _ in range(n_layer)])
        self.norm_f = RMSNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.embedding.weight  # Tie output projection to embedding weights.

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        x = self.norm_f(x)
        return self.lm_head(x)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every step's loss, then a greedy continuation's character ids."""
    parser = argparse.ArgumentParser(description="mamba-minimal")
    parser.add_argument("--d-model", type=int, default=16)
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--block", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    chars = sorted(set(TEXT))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)

    model = Mamba(len(chars), args.d_model, args.n_layer)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)

    losses = []
    for step in range(args.steps):
        ix = torch.randint(len(data) - args.block - 1, (args.batch_size,))
        x = torch.stack([data[i : i + args.block] for i in ix])
        y = torch.stack([data[i + 1 : i + args.block + 1] for i in ix])
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        ids = data[: args.block].unsqueeze(0)
        for _ in range(6):
            next_id = model(ids)[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, next_id], dim=1)
    return losses + ids[0, args.block :].float().tolist()


if __name__ == "__main__":
    main()
