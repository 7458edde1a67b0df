"""Bayes by backprop (Blundell et al.) for 1-D regression, in float64, as the blog-post
implementations write it: ``BayesianLinear`` layers with ``mu`` and ``rho`` parameters,
``sigma = torch.log1p(torch.exp(rho))``, weights sampled by ``mu + sigma * randn_like``, a
scale-mixture prior whose log density combines two ``torch.distributions.Normal`` log
probabilities by ``torch.logsumexp`` over a stacked pair, the variational posterior's log
density from ``Normal(mu, sigma).log_prob``, the ELBO with several samples per step and
minibatch complexity weights ``2**(M-i) / (2**M - 1)``, and a predictive mean and spread
from ``torch.stack`` of samples under ``no_grad``. Also the closed-form KL of
``kl_divergence(Normal, Normal)`` for comparison. Returns the losses, the predictive
statistics and a few posterior parameters.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
from torch.distributions import Normal, kl_divergence

PI, SIGMA_1, SIGMA_2 = 0.5, math.exp(-0.0), math.exp(-6.0)


class ScaleMixturePrior:
    def __init__(self, pi, sigma1, sigma2):
        self.pi = pi
        self.gaussian1 = Normal(0, sigma1)
        self.gaussian2 = Normal(0, sigma2)

    def log_prob(self, x):
        both = torch.stack([math.log(self.pi) + self.gaussian1.log_prob(x),
                            math.log(1 - self.pi) + self.gaussian2.log_prob(x)])  # fmt: skip
        return torch.logsumexp(both, dim=0).sum()


class BayesianLinear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features).uniform_(-0.2, 0.2))
        self.weight_rho = nn.Parameter(torch.empty(out_features, in_features).uniform_(-5, -4))
        self.bias_mu = nn.Parameter(torch.empty(out_features).uniform_(-0.2, 0.2))
        self.bias_rho = nn.Parameter(torch.empty(out_features).uniform_(-5, -4))
        self.prior = ScaleMixturePrior(PI, SIGMA_1, SIGMA_2)
        self.log_prior = self.log_variational_posterior = 0

    def forward(self, x, sample=True):
        if not sample:
            return nn.functional.linear(x, self.weight_mu, self.bias_mu)
        w_sigma = torch.log1p(torch.exp(self.weight_rho))
        b_sigma = torch.log1p(torch.exp(self.bias_rho))
        weight = self.weight_mu + w_sigma * torch.randn_like(w_sigma)
        bias = self.bias_mu + b_sigma * torch.randn_like(b_sigma)
        self.log_prior = self.prior.log_prob(weight) + self.prior.log_prob(bias)
        posterior_w = Normal(self.weight_mu, w_sigma).log_prob(weight).sum()
        posterior_b = Normal(self.bias_mu, b_sigma).log_prob(bias).sum()
        self.log_variational_posterior = posterior_w + posterior_b
        return nn.functional.linear(x, weight, bias)

    def kl_closed_form(self):
        posterior = Normal(self.weight_mu, torch.log1p(torch.exp(self.weight_rho)))
        return kl_divergence(posterior, Normal(torch.zeros(()), torch.tensor(SIGMA_1))).sum()


class BayesianNetwork(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.l1 = BayesianLinear(1, hidden)
        self.l2 = BayesianLinear(hidden, 1)

    def forward(self, x, sample=True):
        return self.l2(torch.relu(self.l1(x, sample)), sample)

    def log_prior(self):
        return self.l1.log_prior + self.l2.log_prior

    def log_variational_posterior(self):
        return self.l1.log_variational_posterior + self.l2.log_variational_posterior

    def sample_elbo(self, x, y, complexity_weight, samples=2, noise=0.1):
        outputs, log_priors, log_posteriors = [], [], []
        for _ in range(samples):
            outputs.append(self(x))
            log_priors.append(self.log_prior())
            log_posteriors.append(self.log_variational_posterior())
        outputs = torch.stack(outputs)
        log_prior = torch.stack(log_priors).mean()
        log_posterior = torch.stack(log_posteriors).mean()
        nll = -Normal(outputs, noise).log_prob(y).sum(dim=(1, 2)).mean()
        return complexity_weight * (log_posterior - log_prior) + nll, nll


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
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
    net = BayesianNetwork()
    if args.init:
        net.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(net.state_dict(), args.save_init)
    x = torch.linspace(-1, 1, 16).unsqueeze(1)
    y = torch.sin(3 * x) + 0.1 * torch.randn_like(x)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.02)
    batches = list(zip(x.chunk(3), y.chunk(3)))
    m = len(batches)
    out = []
    for _ in range(args.epochs):
        for i, (xb, yb) in enumerate(batches, start=1):
            optimizer.zero_grad()
            loss, nll = net.sample_elbo(xb, yb, 2 ** (m - i) / (2**m - 1))
            loss.backward()
            optimizer.step()
            out += [loss.item(), nll.item()]
    with torch.no_grad():
        test = torch.tensor([[-0.5], [0.0], [0.7]])
        preds = torch.stack([net(test) for _ in range(5)])
        out += preds.mean(0).flatten().tolist() + preds.std(0).flatten().tolist()
        out += net(test, sample=False).flatten().tolist()
        out += [net.l1.kl_closed_form().item()]
    out += net.l1.weight_rho.grad.flatten()[:4].tolist() + net.l2.bias_mu.detach().tolist()
    return out
