"""Policy gradients in the style of pytorch/examples ``reinforcement_learning`` (``reinforce.py``
and ``actor_critic.py``).

REINFORCE: a policy with dropout and a softmax head, ``Categorical(probs)``, ``m.sample()``,
``m.log_prob(action)`` kept per step, discounted returns built backwards into a ``deque``,
normalised with ``(returns - returns.mean()) / (returns.std() + eps)``, and
``torch.cat(policy_loss).sum()``. Actor-critic: a shared body with action and value heads,
a ``namedtuple`` of saved actions, advantages ``R - value.item()``, ``F.smooth_l1_loss`` of
the values, an entropy bonus, and ``torch.stack(...).sum()`` of both losses. PPO: the
rollout's old log-probabilities under ``no_grad``, a few epochs of the clipped surrogate
(``torch.exp`` of the log-ratio, ``torch.clamp``, elementwise ``torch.min``), an MSE value
loss and ``clip_grad_norm_``. The environment
is a small deterministic corridor written here (the examples' gym is not a dependency).
"""

from __future__ import annotations

import argparse
from collections import deque, namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

SavedAction = namedtuple("SavedAction", ["log_prob", "value", "entropy"])


class Corridor:
    """Positions 0..length-1; actions left, stay, right; +1 for reaching the right end, -1 for
    falling off the left end, -0.05 a step; the observation is the one-hot position and the
    step count scaled."""

    def __init__(self, length=6, max_steps=12):
        self.length, self.max_steps = length, max_steps

    def reset(self):
        self.pos, self.t = 1, 0
        return self.observe()

    def observe(self):
        obs = np.zeros(self.length + 1, dtype=np.float32)
        obs[self.pos] = 1.0
        obs[-1] = self.t / self.max_steps
        return obs

    def step(self, action):
        self.pos += action - 1
        self.t += 1
        if self.pos >= self.length - 1:
            return self.observe(), 1.0, True
        if self.pos < 0:
            self.pos = 0
            return self.observe(), -1.0, True
        return self.observe(), -0.05, self.t >= self.max_steps


class Policy(nn.Module):
    def __init__(self, n_obs, hidden, n_actions):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(n_obs, hidden)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(hidden, n_actions)

        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


class ActorCritic(nn.Module):
    def __init__(self, n_obs, hidden, n_actions):
        super(ActorCritic, self).__init__()
        self.affine1 = nn.Linear(n_obs, hidden)
        self.action_head = nn.Linear(hidden, n_actions)
        self.value_head = nn.Linear(hidden, 1)

        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_logits = self.action_head(x)
        state_values = self.value_head(x)
        return action_logits, state_values


def main(argv=None):
    parser = argparse.ArgumentParser(description="REINFORCE and actor-critic")
    parser.add_argument("--algo", choices=["reinforce", "actor-critic", "ppo"], default="reinforce")
    parser.add_argument("--ppo-epochs", type=int, default=3)
    parser.add_argument("--clip", type=float, default=0.2)
    parser.add_argument("--episodes", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--entropy-coef", type=float, default=0.01)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    env = Corridor()
    n_obs, n_actions = env.length + 1, 3
    if args.algo == "reinforce":
        model = Policy(n_obs, args.hidden, n_actions)
    else:
        model = ActorCritic(n_obs, args.hidden, n_actions)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    eps = np.finfo(np.float32).eps.item()

    def select_action(state):
        state = torch.from_numpy(state).float().unsqueeze(0)
        if args.algo == "reinforce":
            probs = model(state)
            m = Categorical(probs)
            action = m.sample()
            model.saved_log_probs.append(m.log_prob(action))
        else:
            logits, state_value = model(state)
            m = Categorical(logits=logits)
            action = m.sample()
            model.saved_actions.append(SavedAction(m.log_prob(action), state_value, m.entropy()))
        return action.item()

    def discounted_returns():
        R = 0
        returns = deque()
        for r in model.rewards[::-1]:
            R = r + args.gamma * R
            returns.appendleft(R)
        return torch.tensor(returns)

    def finish_reinforce():
        returns = discounted_returns()
        returns = (returns - returns.mean()) / (returns.std() + eps)
        policy_loss = []
        for log_prob, R in zip(model.saved_log_probs, returns):
            policy_loss.append(-log_prob * R)
        optimizer.zero_grad()
        policy_loss = torch.cat(policy_loss).sum()
        policy_loss.backward()
        optimizer.step()
        del model.rewards[:]
        del model.saved_log_probs[:]
        return policy_loss.item()

    def finish_ppo(states, actions):
        # old log-probabilities and values of the rollout, then a few clipped-surrogate epochs
        returns = discounted_returns()
        states = torch.cat(states)
        actions = torch.tensor(actions)
        with torch.no_grad():
            logits, values = model(states)
            old_log_probs = Categorical(logits=logits).log_prob(actions)
            advantages = returns - values.squeeze(-1)
            advantages = (advantages - advantages.mean()) / (advantages.std() + eps)
        total = 0.0
        for _ in range(args.ppo_epochs):
            logits, values = model(states)
            dist = Categorical(logits=logits)
            ratio = torch.exp(dist.log_prob(actions) - old_log_probs)
            surr1 = ratio * advantages
            surr2 = torch.clamp(ratio, 1.0 - args.clip, 1.0 + args.clip) * advantages
            policy_loss = -torch.min(surr1, surr2).mean()
            value_loss = F.mse_loss(values.squeeze(-1), returns)
            loss = policy_loss + 0.5 * value_loss - args.entropy_coef * dist.entropy().mean()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            total += loss.item()
        del model.rewards[:]
        del model.saved_actions[:]
        return total

    def finish_actor_critic():
        returns = discounted_returns()
        returns = (returns - returns.mean()) / (returns.std() + eps)
        policy_losses, value_losses, entropies = [], [], []
        for (log_prob, value, entropy), R in zip(model.saved_actions, returns):
            advantage = R - value.item()
            policy_losses.append(-log_prob * advantage)
            value_losses.append(F.smooth_l1_loss(value, torch.tensor([[R]])))
            entropies.append(entropy)
        optimizer.zero_grad()
        loss = (
            torch.stack(policy_losses).sum()
            + torch.stack(value_losses).sum()
            - args.entropy_coef * torch.stack(entropies).sum()
        )
        loss.backward()
        optimizer.step()
        del model.rewards[:]
        del model.saved_actions[:]
        return loss.item()

    running_reward = 0.0
    results = []
    for _ in range(args.episodes):
        state, ep_reward, done = env.reset(), 0.0, False
        states, actions = [], []
        while not done:
            states.append(torch.from_numpy(state).unsqueeze(0))
            action = select_action(state)
            actions.append(action)
            state, reward, done = env.step(action)
            model.rewards.append(reward)
            ep_reward += reward
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        if args.algo == "reinforce":
            results.append(finish_reinforce())
        elif args.algo == "ppo":
            results.append(finish_ppo(states, actions))
        else:
            results.append(finish_actor_critic())
        results += [ep_reward, running_reward]
    return results


if __name__ == "__main__":
    main()
