"""Models that lean on tw.distributions and tw.linalg, each trained on NumPy and torch:cpu:
a VAE written with ``Normal.rsample``, ``Bernoulli.log_prob`` and ``kl_divergence``, and a
Gaussian process whose marginal likelihood goes through ``cholesky`` and ``cholesky_solve``,
checked against the same model in PyTorch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.distributions as D
import tensorweaver.nn as nn
import torch
from sklearn.datasets import load_digits


class DistributionVAE(nn.Module):
    def __init__(self, features: int, hidden: int = 64, latent: int = 4) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.mu = nn.Linear(hidden, latent)
        self.log_sigma = nn.Linear(hidden, latent)
        self.decoder = nn.Sequential(
            nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, features)
        )

    def loss(self, x: Any) -> Any:
        h = self.encoder(x)
        posterior = D.Normal(self.mu(h), self.log_sigma(h).exp())
        z = posterior.rsample()
        prior = D.Normal(tw.zeros_like(z), tw.ones_like(z))
        likelihood = D.Bernoulli(logits=self.decoder(z))
        elbo = likelihood.log_prob(x).sum(-1) - D.kl_divergence(posterior, prior).sum(-1)
        return -elbo.mean()


def test_a_vae_on_distributions_learns_the_digits(backend: str) -> None:
    tw.manual_seed(0)
    digits = load_digits().data[:512] / 16
    x = tw.tensor((digits > 0.5).astype(np.float64))
    model = DistributionVAE(64)
    opt = tw.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(60):
        loss = model.loss(x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0]
    assert all(math.isfinite(v) for v in losses)


def test_the_distribution_kl_is_the_closed_form_the_vae_model_uses(backend: str) -> None:
    mu, logvar = tw.randn(5, 3), tw.randn(5, 3)
    q = D.Normal(mu, (0.5 * logvar).exp())
    closed = -0.5 * (1 + logvar - mu * mu - logvar.exp())
    assert tw.allclose(D.kl_divergence(q, D.Normal(0.0, 1.0)), closed, rtol=1e-12, atol=1e-12)


def _negative_log_marginal_likelihood(lib: Any, x: Any, y: Any, params: Any) -> Any:
    log_length, log_noise = params
    sq = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    k = (-0.5 * sq / log_length.exp() ** 2).exp() + log_noise.exp() * lib.eye(len(x), dtype=x.dtype)
    lower = lib.linalg.cholesky(k)
    alpha = lib.cholesky_solve(y[:, None], lower)
    return (
        0.5 * (y[:, None] * alpha).sum()
        + lower.diagonal().log().sum()
        + 0.5 * len(x) * math.log(2 * math.pi)
    )


def test_a_gaussian_process_fits_its_hyperparameters_like_torch(backend: str) -> None:
    rng = np.random.default_rng(0)
    x_np = rng.uniform(-3, 3, (25, 1))
    y_np = np.sin(2 * x_np[:, 0]) + 0.1 * rng.normal(size=25)
    ours = [tw.tensor(0.0, requires_grad=True), tw.tensor(-1.0, requires_grad=True)]
    theirs = [torch.tensor(0.0, dtype=torch.float64, requires_grad=True),
              torch.tensor(-1.0, dtype=torch.float64, requires_grad=True)]  # fmt: skip
    opt_ours, opt_theirs = tw.optim.Adam(ours, lr=0.05), torch.optim.Adam(theirs, lr=0.05)
    x, y = tw.tensor(x_np), tw.tensor(y_np)
    xt, yt = torch.tensor(x_np), torch.tensor(y_np)
    first = None
    for _ in range(40):
        loss = _negative_log_marginal_likelihood(tw, x, y, ours)
        loss_t = _negative_log_marginal_likelihood(torch, xt, yt, theirs)
        first = loss.item() if first is None else first
        assert loss.item() == pytest.approx(loss_t.item(), rel=1e-9)
        opt_ours.zero_grad()
        opt_theirs.zero_grad()
        loss.backward()
        loss_t.backward()
        for a, b in zip(ours, theirs):
            assert a.grad.item() == pytest.approx(b.grad.item(), rel=1e-7, abs=1e-10)
        opt_ours.step()
        opt_theirs.step()
    assert loss.item() < first - 5  # the fit improved the evidence a lot


def _policy_step(lib: Any, policy: Any, opt: Any, states: Any, actions: Any, rewards: Any) -> Any:
    """One REINFORCE step: -(log pi(a|s) * (r - mean r)).mean(), backward, update."""
    dist = (D if lib is tw else torch.distributions).Categorical(logits=policy(states))
    advantage = rewards - rewards.mean()
    loss = -(dist.log_prob(actions) * advantage).mean() - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def test_a_policy_gradient_step_with_categorical_learns_a_bandit_like_torch(backend: str) -> None:
    # A contextual bandit: the rewarded arm is argmax(W s). Actions are sampled by
    # tensorweaver's Categorical and replayed in the PyTorch twin, so the two take the same
    # steps: losses equal, and the policy learns.
    rng = np.random.default_rng(0)
    arms, features, batch = 4, 6, 64
    best = rng.normal(size=(arms, features))
    ours, theirs = nn.Linear(features, arms), torch.nn.Linear(features, arms).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.detach().numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.detach().numpy()))
    opt_ours = tw.optim.SGD(ours.parameters(), lr=0.5)
    opt_theirs = torch.optim.SGD(theirs.parameters(), lr=0.5)
    hit_rates = []
    for _ in range(80):
        s = rng.normal(size=(batch, features))
        with tw.no_grad():
            actions = D.Categorical(logits=ours(tw.tensor(s))).sample()
        a = actions.numpy()
        r = (a == (s @ best.T).argmax(1)).astype(np.float64)
        hit_rates.append(r.mean())
        loss = _policy_step(tw, ours, opt_ours, tw.tensor(s), actions, tw.tensor(r))
        loss_t = _policy_step(
            torch, theirs, opt_theirs, torch.tensor(s), torch.tensor(a), torch.tensor(r)
        )
        assert loss.item() == pytest.approx(loss_t.item(), rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(
        ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-9
    )
    assert np.mean(hit_rates[:10]) < 0.45 and np.mean(hit_rates[-10:]) > 0.7
