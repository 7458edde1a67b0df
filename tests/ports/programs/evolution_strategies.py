"""Evolution strategies (after OpenAI's "Evolution Strategies as a Scalable Alternative to
Reinforcement Learning" and the estool / evostra-style PyTorch scripts), in float64: a
gradient-free search that still uses ``torch.optim``.

The policy's parameters are flattened with ``nn.utils.parameters_to_vector``; a population of
antithetic perturbations (``torch.randn`` noise and its negation, ``torch.cat``) is written
back into the network with ``nn.utils.vector_to_parameters`` and scored under
``torch.no_grad()`` on a small control task (a point mass steered to a goal; rewards summed
over a Python loop of ``tanh`` actions). Fitnesses become centred ranks
(``argsort().argsort()``), the estimated gradient ``noise.T @ ranks`` is placed into
``p.grad`` through ``vector_to_parameters`` on the gradients, and Adam with weight decay takes
the step. Returns the mean/max rewards per generation and the parameter norm.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn


class Policy(nn.Module):
    def __init__(self, obs=4, hidden=8, act=2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs, hidden), nn.Tanh(), nn.Linear(hidden, act))

    def forward(self, obs):
        return torch.tanh(self.net(obs))


@torch.no_grad()
def episode_reward(policy, starts, goals, horizon=6):
    pos, vel = starts.clone(), torch.zeros_like(starts)
    reward = torch.zeros(starts.size(0))
    for _ in range(horizon):
        action = policy(torch.cat([pos - goals, vel], dim=1))
        vel = 0.8 * vel + 0.2 * action
        pos = pos + vel
        reward -= (pos - goals).norm(dim=1) + 0.01 * action.pow(2).sum(dim=1)
    return reward.mean()


def centered_ranks(x):
    ranks = x.argsort().argsort().to(x.dtype)
    return ranks / (x.numel() - 1) - 0.5


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--half-population", type=int, default=6)
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
    policy = Policy()
    if args.init:
        policy.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(policy.state_dict(), args.save_init)
    params = list(policy.parameters())
    optimizer = torch.optim.Adam(params, lr=0.03, weight_decay=0.005)
    sigma = 0.1
    out = []
    for _ in range(args.generations):
        starts, goals = torch.randn(4, 2), torch.randn(4, 2)
        theta = nn.utils.parameters_to_vector(params).detach().clone()
        half = torch.randn(args.half_population, theta.numel())
        noise = torch.cat([half, -half])
        rewards = torch.empty(noise.size(0))
        for i, eps in enumerate(noise):
            nn.utils.vector_to_parameters(theta + sigma * eps, params)
            rewards[i] = episode_reward(policy, starts, goals)
        nn.utils.vector_to_parameters(theta, params)
        gradient = -(noise.t() @ centered_ranks(rewards)) / (noise.size(0) * sigma)
        for p in params:
            p.grad = torch.empty_like(p)
        nn.utils.vector_to_parameters(gradient, [p.grad for p in params])
        optimizer.step()
        out += [rewards.mean().item(), rewards.max().item(), rewards.argmax().item()]
        out += [episode_reward(policy, starts, goals).item()]
    out += [nn.utils.parameters_to_vector(params).norm().item()]
    out += params[0].grad[0].tolist()
    return out
