"""Soft actor-critic updates (after OpenAI Spinning Up's ``sac/core.py`` and ``sac/sac.py``,
with the automatic entropy temperature of Haarnoja et al.), on a replay buffer of random
transitions, in float64.

A squashed Gaussian actor: ``Normal(mu, std).rsample()``, ``torch.clamp`` of the log-std,
the tanh correction ``(2 * (np.log(2) - pi_action - F.softplus(-2 * pi_action))).sum(axis=1)``
(a NumPy constant in a tensor expression) checked against
``TransformedDistribution(Normal, TanhTransform(cache_size=1))`` wrapped in ``Independent``;
twin Q networks on ``torch.cat([obs, act], dim=-1)`` and ``torch.squeeze(q, -1)``; target
networks from ``copy.deepcopy`` with ``requires_grad = False`` and the Polyak update
``p_targ.data.mul_(polyak); p_targ.data.add_((1 - polyak) * p.data)`` under
``torch.no_grad()``; Q parameters frozen with ``requires_grad = False`` during the policy step
via ``itertools.chain``; a ``log_alpha`` leaf trained to a target entropy; replay batches
drawn with ``torch.randint`` from ``torch.as_tensor`` NumPy buffers. Adam for all three.
Returns every loss, the temperature, and the networks' parameters and gradients.
"""

from __future__ import annotations

import argparse
import itertools
from copy import deepcopy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Independent, TransformedDistribution
from torch.distributions.normal import Normal
from torch.distributions.transforms import TanhTransform

LOG_STD_MAX = 2
LOG_STD_MIN = -20


def mlp(sizes, activation, output_activation=nn.Identity):
    layers = []
    for j in range(len(sizes) - 1):
        act = activation if j < len(sizes) - 2 else output_activation
        layers += [nn.Linear(sizes[j], sizes[j + 1]), act()]
    return nn.Sequential(*layers)


class SquashedGaussianMLPActor(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_sizes, activation, act_limit):
        super().__init__()
        self.net = mlp([obs_dim] + list(hidden_sizes), activation, activation)
        self.mu_layer = nn.Linear(hidden_sizes[-1], act_dim)
        self.log_std_layer = nn.Linear(hidden_sizes[-1], act_dim)
        self.act_limit = act_limit

    def forward(self, obs, deterministic=False, with_logprob=True):
        net_out = self.net(obs)
        mu = self.mu_layer(net_out)
        log_std = self.log_std_layer(net_out)
        log_std = torch.clamp(log_std, LOG_STD_MIN, LOG_STD_MAX)
        std = torch.exp(log_std)

        pi_distribution = Normal(mu, std)
        pi_action = mu if deterministic else pi_distribution.rsample()

        if with_logprob:
            logp_pi = pi_distribution.log_prob(pi_action).sum(axis=-1)
            logp_pi -= (2 * (np.log(2) - pi_action - F.softplus(-2 * pi_action))).sum(axis=1)
            squashed = Independent(
                TransformedDistribution(Normal(mu, std), [TanhTransform(cache_size=1)]), 1
            )
            self.check = squashed.log_prob(torch.tanh(pi_action).clamp(-0.999999, 0.999999))
        else:
            logp_pi = None

        pi_action = torch.tanh(pi_action)
        pi_action = self.act_limit * pi_action
        return pi_action, logp_pi


class MLPQFunction(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
        super().__init__()
        self.q = mlp([obs_dim + act_dim] + list(hidden_sizes) + [1], activation)

    def forward(self, obs, act):
        q = self.q(torch.cat([obs, act], dim=-1))
        return torch.squeeze(q, -1)


class MLPActorCritic(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_sizes=(16, 16), activation=nn.ReLU):
        super().__init__()
        self.pi = SquashedGaussianMLPActor(obs_dim, act_dim, hidden_sizes, activation, 1.0)
        self.q1 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)
        self.q2 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)

    def act(self, obs, deterministic=False):
        with torch.no_grad():
            a, _ = self.pi(obs, deterministic, False)
            return a.numpy()


class ReplayBuffer:
    def __init__(self, obs_dim, act_dim, size, rng):
        self.obs_buf = rng.standard_normal((size, obs_dim))
        self.obs2_buf = self.obs_buf + 0.1 * rng.standard_normal((size, obs_dim))
        self.act_buf = np.tanh(rng.standard_normal((size, act_dim)))
        self.rew_buf = rng.standard_normal(size)
        self.done_buf = (rng.random(size) < 0.2).astype(np.float64)
        self.size = size

    def sample_batch(self, batch_size=8):
        idxs = torch.randint(0, self.size, size=(batch_size,))
        batch = dict(obs=self.obs_buf, obs2=self.obs2_buf, act=self.act_buf,
                     rew=self.rew_buf, done=self.done_buf)  # fmt: skip
        return {k: torch.as_tensor(v, dtype=torch.float64)[idxs] for k, v in batch.items()}


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:6].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:6].tolist() + [p.grad.abs().sum().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--updates", type=int, default=4)
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
    obs_dim, act_dim = 5, 2
    ac = MLPActorCritic(obs_dim, act_dim)
    if args.init:
        ac.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(ac.state_dict(), args.save_init)
    ac_targ = deepcopy(ac)
    for p in ac_targ.parameters():
        p.requires_grad = False
    q_params = itertools.chain(ac.q1.parameters(), ac.q2.parameters())
    q_params = list(q_params)
    log_alpha = torch.zeros(1, requires_grad=True)
    target_entropy = -float(act_dim)
    pi_optimizer = torch.optim.Adam(ac.pi.parameters(), lr=3e-3)
    q_optimizer = torch.optim.Adam(q_params, lr=3e-3)
    alpha_optimizer = torch.optim.Adam([log_alpha], lr=3e-2)
    gamma, polyak = 0.99, 0.9
    buffer = ReplayBuffer(obs_dim, act_dim, 32, np.random.default_rng(0))
    out = []
    for _ in range(args.updates):
        data = buffer.sample_batch()
        o, a, r, o2, d = data["obs"], data["act"], data["rew"], data["obs2"], data["done"]
        alpha = log_alpha.exp().detach()

        q_optimizer.zero_grad()
        q1, q2 = ac.q1(o, a), ac.q2(o, a)
        with torch.no_grad():
            a2, logp_a2 = ac.pi(o2)
            q_pi_targ = torch.min(ac_targ.q1(o2, a2), ac_targ.q2(o2, a2))
            backup = r + gamma * (1 - d) * (q_pi_targ - alpha * logp_a2)
        loss_q = ((q1 - backup) ** 2).mean() + ((q2 - backup) ** 2).mean()
        loss_q.backward()
        q_optimizer.step()

        for p in q_params:
            p.requires_grad = False
        pi_optimizer.zero_grad()
        pi, logp_pi = ac.pi(o)
        q_pi = torch.min(ac.q1(o, pi), ac.q2(o, pi))
        loss_pi = (alpha * logp_pi - q_pi).mean()
        loss_pi.backward()
        pi_optimizer.step()
        for p in q_params:
            p.requires_grad = True

        alpha_optimizer.zero_grad()
        loss_alpha = -(log_alpha * (logp_pi.detach() + target_entropy)).mean()
        loss_alpha.backward()
        alpha_optimizer.step()

        with torch.no_grad():
            for p, p_targ in zip(ac.parameters(), ac_targ.parameters()):
                p_targ.data.mul_(polyak)
                p_targ.data.add_((1 - polyak) * p.data)
        out += [loss_q.item(), loss_pi.item(), loss_alpha.item(), log_alpha.item()]
        out += logp_pi.tolist() + ac.pi.check.tolist() + values(ac) + values(ac_targ)
    act = ac.act(torch.as_tensor(buffer.obs_buf[:3]), deterministic=True)
    return out + act.flatten().tolist()


if __name__ == "__main__":
    main()
