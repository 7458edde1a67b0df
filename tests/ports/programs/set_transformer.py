"""Permutation-invariant set models (after juho-lee/set_transformer's ``modules.py`` and the
DeepSets sum-decomposition), on padded sets of different sizes, in float64.

The Set Transformer's hand-written multihead block: heads made by ``torch.cat(Q.split(d, 2),
0)``, ``torch.softmax(Q_.bmm(K_.transpose(1, 2)) / math.sqrt(dim_V), 2)`` with a padding mask
applied by ``masked_fill(-inf)``, heads merged back by ``torch.cat(O.split(B, 0), 2)``,
optional ``LayerNorm``s, ``F.relu`` feed-forward residuals; ISAB with
``nn.init.xavier_uniform_`` inducing points and PMA seeds ``repeat``-ed over the batch.
DeepSets: a ``phi`` network, a masked sum pooled by ``(h * mask.unsqueeze(-1)).sum(1)``, and
a ``rho`` network. Targets are the set's maximum and its masked mean; losses ``L1Loss`` and
``SmoothL1Loss(beta=0.5)``; RAdam and Adam(amsgrad) under ``CosineAnnealingWarmRestarts``
stepped with fractional epochs. Returns every loss, gradient and parameter, and a check that
the models' outputs do not change when the sets are permuted.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MAB(nn.Module):
    def __init__(self, dim_Q, dim_K, dim_V, num_heads, ln=False):
        super().__init__()
        self.dim_V = dim_V
        self.num_heads = num_heads
        self.fc_q = nn.Linear(dim_Q, dim_V)
        self.fc_k = nn.Linear(dim_K, dim_V)
        self.fc_v = nn.Linear(dim_K, dim_V)
        if ln:
            self.ln0 = nn.LayerNorm(dim_V)
            self.ln1 = nn.LayerNorm(dim_V)
        self.fc_o = nn.Linear(dim_V, dim_V)

    def forward(self, Q, K, key_mask=None):
        Q = self.fc_q(Q)
        K, V = self.fc_k(K), self.fc_v(K)

        dim_split = self.dim_V // self.num_heads
        Q_ = torch.cat(Q.split(dim_split, 2), 0)
        K_ = torch.cat(K.split(dim_split, 2), 0)
        V_ = torch.cat(V.split(dim_split, 2), 0)

        scores = Q_.bmm(K_.transpose(1, 2)) / math.sqrt(self.dim_V)
        if key_mask is not None:
            pad = ~key_mask.repeat(self.num_heads, 1).unsqueeze(1)
            scores = scores.masked_fill(pad, float("-inf"))
        A = torch.softmax(scores, 2)
        out = torch.cat((Q_ + A.bmm(V_)).split(Q.size(0), 0), 2)
        out = out if getattr(self, "ln0", None) is None else self.ln0(out)
        out = out + F.relu(self.fc_o(out))
        out = out if getattr(self, "ln1", None) is None else self.ln1(out)
        return out


class ISAB(nn.Module):
    def __init__(self, dim_in, dim_out, num_heads, num_inds, ln=False):
        super().__init__()
        self.I = nn.Parameter(torch.Tensor(1, num_inds, dim_out))
        nn.init.xavier_uniform_(self.I)
        self.mab0 = MAB(dim_out, dim_in, dim_out, num_heads, ln=ln)
        self.mab1 = MAB(dim_in, dim_out, dim_out, num_heads, ln=ln)

    def forward(self, X, mask=None):
        H = self.mab0(self.I.repeat(X.size(0), 1, 1), X, key_mask=mask)
        return self.mab1(X, H)


class PMA(nn.Module):
    def __init__(self, dim, num_heads, num_seeds, ln=False):
        super().__init__()
        self.S = nn.Parameter(torch.Tensor(1, num_seeds, dim))
        nn.init.xavier_uniform_(self.S)
        self.mab = MAB(dim, dim, dim, num_heads, ln=ln)

    def forward(self, X, mask=None):
        return self.mab(self.S.repeat(X.size(0), 1, 1), X, key_mask=mask)


class SetTransformer(nn.Module):
    def __init__(self, dim_input, dim_hidden=8, num_heads=2, num_inds=3):
        super().__init__()
        self.enc1 = ISAB(dim_input, dim_hidden, num_heads, num_inds, ln=True)
        self.enc2 = ISAB(dim_hidden, dim_hidden, num_heads, num_inds, ln=True)
        self.pma = PMA(dim_hidden, num_heads, 1, ln=True)
        self.dec = nn.Linear(dim_hidden, 1)

    def forward(self, X, mask):
        H = self.enc2(self.enc1(X, mask), mask)
        return self.dec(self.pma(H, mask)).squeeze(-1).squeeze(-1)


class DeepSets(nn.Module):
    def __init__(self, dim_input, hidden=10):
        super().__init__()
        self.phi = nn.Sequential(nn.Linear(dim_input, hidden), nn.ELU(), nn.Linear(hidden, hidden))
        self.rho = nn.Sequential(nn.Linear(hidden, hidden), nn.ELU(), nn.Linear(hidden, 1))

    def forward(self, X, mask):
        h = self.phi(X) * mask.unsqueeze(-1)
        pooled = h.sum(1) / mask.sum(1, keepdim=True)
        return self.rho(pooled).squeeze(-1)


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:6].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:6].tolist() + [p.grad.abs().sum().item()]
    return out


def make_sets(batch, max_size, dim):
    sizes = torch.randint(2, max_size + 1, (batch,))
    X = torch.randn(batch, max_size, dim)
    mask = torch.arange(max_size).unsqueeze(0) < sizes.unsqueeze(1)
    X = X.masked_fill(~mask.unsqueeze(-1), 0.0)
    first = X[..., 0].masked_fill(~mask, float("-inf"))
    y_max = first.max(dim=1).values
    y_mean = X[..., 1].sum(1) / sizes
    return X, mask, y_max, y_mean


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
    st, ds = SetTransformer(3), DeepSets(3)
    if args.init:
        state = torch.load(args.init)
        st.load_state_dict(state["st"])
        ds.load_state_dict(state["ds"])
    if args.save_init:
        torch.save({"st": st.state_dict(), "ds": ds.state_dict()}, args.save_init)
    opt_st = torch.optim.RAdam(st.parameters(), lr=3e-3, weight_decay=1e-3)
    opt_ds = torch.optim.Adam(ds.parameters(), lr=3e-3, amsgrad=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt_st, T_0=2, T_mult=2)
    l1, smooth = nn.L1Loss(), nn.SmoothL1Loss(beta=0.5)
    out = []
    iters = 2
    for step in range(args.steps):
        X, mask, y_max, y_mean = make_sets(5, 6, 3)
        opt_st.zero_grad()
        opt_ds.zero_grad()
        loss_st = l1(st(X, mask), y_max)
        loss_ds = smooth(ds(X, mask), y_mean)
        (loss_st + loss_ds).backward()
        out += [loss_st.item(), loss_ds.item()] + values(st) + values(ds)
        opt_st.step()
        opt_ds.step()
        sched.step(step / iters)
    with torch.no_grad():
        X, mask, _, _ = make_sets(3, 6, 3)
        perm = torch.randperm(6)
        a, b = st(X, mask), st(X[:, perm], mask[:, perm])
        c, d = ds(X, mask), ds(X[:, perm], mask[:, perm])
    return out + a.tolist() + [float((a - b).abs().max() < 1e-9)] + c.tolist() + d.tolist()


if __name__ == "__main__":
    main()
