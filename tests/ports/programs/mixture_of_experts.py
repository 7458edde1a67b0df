"""A sparse mixture-of-experts feed-forward layer inside a small classifier, written the way
Switch/Mixtral-style MoE layers usually are in plain PyTorch: a linear router, ``topk`` of
the router's softmax with the kept weights renormalised, token dispatch by
``torch.where(expert_mask[e])`` and ``index_add_`` of the weighted expert outputs, a
one-hot ``expert_mask`` built with ``F.one_hot(...).permute``, the Switch load-balancing
auxiliary loss (fraction of tokens routed to each expert times its mean router
probability), and the router z-loss (``logsumexp`` squared).

The task is synthetic: classify token sequences by which of several prototypes their mean
is nearest.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoE(nn.Module):
    def __init__(self, dim, hidden, num_experts, top_k):
        super().__init__()
        self.num_experts = num_experts
        self.top_k = top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(num_experts)])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)

        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)

        final_hidden_states = torch.zeros(
            (batch_size * sequence_length, hidden_dim),
            dtype=hidden_states.dtype,
            device=hidden_states.device,
        )
        # one hot encode the selected experts to create an expert mask
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)

        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            if top_x.shape[0] == 0:
                continue
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


def load_balancing_loss(router_logits, num_experts, top_k):
    routing_weights = F.softmax(router_logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts)
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    return torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0)) * num_experts


def router_z_loss(router_logits):
    return torch.logsumexp(router_logits, dim=-1).pow(2).mean()


class MoEClassifier(nn.Module):
    def __init__(self, in_dim, dim, hidden, num_experts, top_k, n_classes):
        super().__init__()
        self.embed = nn.Linear(in_dim, dim)
        self.norm = nn.RMSNorm(dim)
        self.moe = SparseMoE(dim, hidden, num_experts, top_k)
        self.head = nn.Linear(dim, n_classes)

    def forward(self, x):
        h = self.embed(x)
        moe_out, router_logits = self.moe(self.norm(h))
        h = h + moe_out
        return self.head(h.mean(dim=1)), router_logits


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every step's task loss, balance loss and z-loss, and each expert's token
    count at the end."""
    parser = argparse.ArgumentParser(description="sparse MoE classifier")
    parser.add_argument("--in-dim", type=int, default=6)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=24)
    parser.add_argument("--experts", type=int, default=4)
    parser.add_argument("--top-k", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=5)
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--aux-coef", type=float, default=0.02)
    parser.add_argument("--z-coef", type=float, default=0.001)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    prototypes = rng.normal(size=(args.classes, args.in_dim))

    def batch():
        y = rng.integers(0, args.classes, size=args.batch_size)
        x = prototypes[y][:, None] + rng.normal(size=(args.batch_size, args.seq_len, args.in_dim))
        return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)

    model = MoEClassifier(args.in_dim, args.dim, args.hidden, args.experts, args.top_k,
                          args.classes)  # fmt: skip
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)

    losses = []
    for step in range(args.steps):
        x, y = batch()
        logits, router_logits = model(x)
        task = F.cross_entropy(logits, y)
        aux = load_balancing_loss(router_logits, args.experts, args.top_k)
        z = router_z_loss(router_logits)
        loss = task + args.aux_coef * aux + args.z_coef * z
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += [task.item(), aux.item(), z.item()]
        print(f"step {step}: task {task.item():.4f} aux {aux.item():.4f} z {z.item():.4f}")

    model.eval()
    with torch.no_grad():
        x, _ = batch()
        _, router_logits = model(x)
        chosen = router_logits.topk(args.top_k, dim=-1).indices.flatten()
        counts = torch.bincount(chosen, minlength=args.experts)
    losses += counts.float().tolist()
    return losses


if __name__ == "__main__":
    main()
