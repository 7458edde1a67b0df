"""Deep Q-learning in the style of PyTorch's "Reinforcement Learning (DQN)" tutorial.

A replay memory of ``namedtuple`` transitions in a ``deque``, an epsilon-greedy policy
(``policy_net(state).max(1).indices.view(1, 1)``), a batch built with ``torch.cat`` and a
bool mask of the non-final states made from a tuple of Python bools, next-state values
written through that mask (``next_state_values[non_final_mask] = ...``), ``gather`` of the
chosen actions, ``nn.SmoothL1Loss``, AdamW with ``amsgrad=True``, ``clip_grad_value_``, and
the soft update of the target network through its state dict. The environment is a small
cart-pole written here in NumPy (the tutorial's gym is not a dependency); its start states
and the exploration draws come from a seeded ``random.Random``.
"""

from __future__ import annotations

import argparse
import math
import random
from collections import deque, namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))


class ReplayMemory:
    def __init__(self, capacity, rng):
        self.memory = deque([], maxlen=capacity)
        self.rng = rng

    def push(self, *args):
        self.memory.append(Transition(*args))

    def sample(self, batch_size):
        return self.rng.sample(self.memory, batch_size)

    def __len__(self):
        return len(self.memory)


class DQN(nn.Module):
    def __init__(self, n_observations, n_actions, hidden):
        super().__init__()
        self.layer1 = nn.Linear(n_observations, hidden)
        self.layer2 = nn.Linear(hidden, hidden)
        self.layer3 = nn.Linear(hidden, n_actions)

    def forward(self, x):
        x = torch.relu(self.layer1(x))
        x = torch.relu(self.layer2(x))
        return self.layer3(x)


class CartPole:
    """The classic cart-pole dynamics (Euler steps), ending when the pole falls or the cart
    leaves the track."""

    def __init__(self, rng):
        self.rng = rng

    def reset(self):
        self.state = np.array([self.rng.uniform(-0.05, 0.05) for _ in range(4)])
        return self.state.astype(np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot**2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos**2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * x_acc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc
        self.state = np.array([x, x_dot, theta, theta_dot])
        done = abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360
        return self.state.astype(np.float32), 1.0, done


def main(argv=None):
    parser = argparse.ArgumentParser(description="DQN on a cart-pole")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--max-steps", type=int, default=40)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    GAMMA, EPS_START, EPS_END, EPS_DECAY, TAU = 0.99, 0.9, 0.05, 100, 0.005
    rng = random.Random(0)
    env = CartPole(rng)
    device = torch.device("cpu")
    policy_net = DQN(4, 2, args.hidden).to(device)
    target_net = DQN(4, 2, args.hidden).to(device)
    if args.save_init:
        torch.save({"policy": policy_net.state_dict()}, args.save_init)
    if args.init:
        policy_net.load_state_dict(torch.load(args.init)["policy"])
    target_net.load_state_dict(policy_net.state_dict())
    optimizer = optim.AdamW(policy_net.parameters(), lr=args.lr, amsgrad=True)
    memory = ReplayMemory(1000, rng)
    steps_done = 0
    losses = []

    def select_action(state):
        nonlocal steps_done
        sample = rng.random()
        eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1.0 * steps_done / EPS_DECAY)
        steps_done += 1
        if sample > eps_threshold:
            with torch.no_grad():
                return policy_net(state).max(1).indices.view(1, 1)
        return torch.tensor([[rng.randrange(2)]], device=device, dtype=torch.long)

    def optimize_model():
        if len(memory) < args.batch_size:
            return
        transitions = memory.sample(args.batch_size)
        batch = Transition(*zip(*transitions))
        non_final_mask = torch.tensor(
            tuple(map(lambda s: s is not None, batch.next_state)), device=device, dtype=torch.bool
        )
        non_final_next_states = torch.cat([s for s in batch.next_state if s is not None])
        state_batch = torch.cat(batch.state)
        action_batch = torch.cat(batch.action)
        reward_batch = torch.cat(batch.reward)
        state_action_values = policy_net(state_batch).gather(1, action_batch)
        next_state_values = torch.zeros(args.batch_size, device=device)
        with torch.no_grad():
            next_state_values[non_final_mask] = target_net(non_final_next_states).max(1).values
        expected_state_action_values = (next_state_values * GAMMA) + reward_batch
        criterion = nn.SmoothL1Loss()
        loss = criterion(state_action_values, expected_state_action_values.unsqueeze(1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
        optimizer.step()
        losses.append(loss.item())

    durations = []
    for _ in range(args.episodes):
        state = env.reset()
        state = torch.tensor(state, dtype=torch.float32, device=device).unsqueeze(0)
        steps = 0
        while steps < args.max_steps:
            steps += 1
            action = select_action(state)
            observation, reward, terminated = env.step(action.item())
            reward = torch.tensor([reward], device=device)
            if terminated:
                next_state = None
            else:
                next_state = torch.tensor(
                    observation, dtype=torch.float32, device=device
                ).unsqueeze(0)
            memory.push(state, action, next_state, reward)
            state = next_state
            optimize_model()
            target_net_state_dict = target_net.state_dict()
            policy_net_state_dict = policy_net.state_dict()
            for key in policy_net_state_dict:
                target_net_state_dict[key] = policy_net_state_dict[
                    key
                ] * TAU + target_net_state_dict[key] * (1 - TAU)
            target_net.load_state_dict(target_net_state_dict)
            if terminated:
                break
        durations.append(float(steps))
    with torch.no_grad():
        probe = torch.tensor(env.reset(), device=device).unsqueeze(0)
        q = target_net(probe)
    return [*losses, *durations, *q.flatten().tolist()]


if __name__ == "__main__":
    main()
