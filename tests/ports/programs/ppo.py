"""Proximal policy optimisation, in the style of the single-file PPO scripts (CleanRL's
``ppo.py`` and its many copies): an actor-critic with ``layer_init`` (orthogonal weights with
gain ``sqrt(2)``, constant biases), actions drawn from ``torch.distributions.Categorical
(logits=...)``, generalised advantage estimation computed backwards over the rollout,
minibatch epochs over a ``randperm`` of the batch, the clipped surrogate objective with
``torch.max`` of the two losses, a clipped value loss, the entropy bonus, approximate KL and
clip fraction for logging, Adam with ``eps=1e-5``, learning-rate annealing through
``param_groups``, and ``clip_grad_norm_``.

The environment is a small vectorised chain walk written with NumPy (no gym): move left or
right, reward at the right end.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.distributions.categorical import Categorical


class ChainEnvs:
    """``n`` independent chains of ``length`` states; observation one-hot; actions 0/1."""

    def __init__(self, n, length, rng):
        self.n, self.length, self.rng = n, length, rng
        self.pos = np.zeros(n, dtype=np.int64)

    def obs(self):
        one_hot = np.zeros((self.n, self.length), dtype=np.float32)
        one_hot[np.arange(self.n), self.pos] = 1.0
        return one_hot

    def reset(self):
        self.pos = self.rng.integers(0, self.length // 2, size=self.n)
        return self.obs()

    def step(self, action):
        slip = self.rng.random(self.n) < 0.1
        move = np.where(slip, -1, np.where(action == 1, 1, -1))
        self.pos = np.clip(self.pos + move, 0, self.length - 1)
        done = self.pos == self.length - 1
        reward = done.astype(np.float32) - 0.01
        self.pos = np.where(done, 0, self.pos)
        return self.obs(), reward, done


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):  # noqa: B008
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden=32):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden, n_actions), std=0.01),
        )

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; per update the policy loss, value loss, entropy, approx KL and clip fraction,
    and the rollout's mean reward."""
    parser = argparse.ArgumentParser(description="PPO on a chain walk")
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--num-steps", type=int, default=16)
    parser.add_argument("--chain", type=int, default=6)
    parser.add_argument("--updates", type=int, default=3)
    parser.add_argument("--update-epochs", type=int, default=2)
    parser.add_argument("--num-minibatches", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=2.5e-3)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--gae-lambda", type=float, default=0.95)
    parser.add_argument("--clip-coef", type=float, default=0.2)
    parser.add_argument("--ent-coef", type=float, default=0.01)
    parser.add_argument("--vf-coef", type=float, default=0.5)
    parser.add_argument("--max-grad-norm", type=float, default=0.5)
    parser.add_argument("--norm-adv", type=int, default=1)
    parser.add_argument("--clip-vloss", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    device = torch.device("cpu")
    envs = ChainEnvs(args.num_envs, args.chain, rng)

    agent = Agent(args.chain, 2).to(device)
    if args.save_init:
        torch.save(agent.state_dict(), args.save_init)
    if args.init:
        agent.load_state_dict(torch.load(args.init))
    optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    obs = torch.zeros((args.num_steps, args.num_envs, args.chain)).to(device)
    actions = torch.zeros((args.num_steps, args.num_envs)).to(device)
    logprobs = torch.zeros((args.num_steps, args.num_envs)).to(device)
    rewards = torch.zeros((args.num_steps, args.num_envs)).to(device)
    dones = torch.zeros((args.num_steps, args.num_envs)).to(device)
    values = torch.zeros((args.num_steps, args.num_envs)).to(device)

    next_obs = torch.Tensor(envs.reset()).to(device)
    next_done = torch.zeros(args.num_envs).to(device)
    log = []
    for update in range(1, args.updates + 1):
        frac = 1.0 - (update - 1.0) / args.updates
        optimizer.param_groups[0]["lr"] = frac * args.learning_rate

        for step in range(0, args.num_steps):
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            next_obs, reward, done = envs.step(action.cpu().numpy())
            rewards[step] = torch.tensor(reward).to(device).view(-1)
            next_obs, next_done = torch.Tensor(next_obs).to(device), torch.Tensor(done).to(device)

        # bootstrap value if not done
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards).to(device)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = (
                    delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
                )
            returns = advantages + values

        # flatten the batch
        b_obs = obs.reshape((-1, args.chain))
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape(-1)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        clipfracs = []
        for _epoch in range(args.update_epochs):
            b_inds = torch.randperm(batch_size).numpy()
            for start in range(0, batch_size, minibatch_size):
                end = start + minibatch_size
                mb_inds = b_inds[start:end]

                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb_inds], b_actions.long()[mb_inds]
                )
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()

                with torch.no_grad():
                    # calculate approx_kl http://joschu.net/blog/kl-approx.html
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > args.clip_coef).float().mean().item()]

                mb_advantages = b_advantages[mb_inds]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (
                        mb_advantages.std() + 1e-8
                    )

                # Policy loss
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(
                    ratio, 1 - args.clip_coef, 1 + args.clip_coef
                )
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                # Value loss
                newvalue = newvalue.view(-1)
                if args.clip_vloss:
                    v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                    v_clipped = b_values[mb_inds] + torch.clamp(
                        newvalue - b_values[mb_inds], -args.clip_coef, args.clip_coef
                    )
                    v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                    v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
                    v_loss = 0.5 * v_loss_max.mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        log += [pg_loss.item(), v_loss.item(), entropy_loss.item(), approx_kl.item(),
                float(np.mean(clipfracs)), rewards.mean().item()]  # fmt: skip
        print(f"update {update}: pg {pg_loss.item():.4f} v {v_loss.item():.4f}")
    return log


if __name__ == "__main__":
    main()
