"""A categorical VAE with a Gumbel-softmax latent (after Jang et al.'s and the many
"categorical VAE in PyTorch" notebooks, which draw the Gumbel noise themselves from
``torch.rand``), and the discrete / simplex distributions of ``torch.distributions`` a
Bayesian user scores with, in float64.

The encoder gives logits for ``latents`` categorical variables; ``sample_gumbel`` is
``-torch.log(-torch.log(U + eps) + eps)``; the relaxed sample ``softmax((logits + g) / tau)``
with the straight-through hard sample ``(y_hard - y).detach() + y`` from ``argmax`` and
``scatter_``; the KL to a uniform prior by ``kl_divergence(Categorical(logits), Categorical
(probs))`` beside the hand-written ``q * log(q * K)``; the temperature annealed by
``max(tau * exp(-r * step), tau_min)``; BCE-with-logits reconstruction. Then
``OneHotCategorical``, ``RelaxedOneHotCategorical.log_prob``, ``Dirichlet``, ``Beta``,
``LogNormal``, ``Gumbel``, ``Binomial`` and ``Poisson`` log-probabilities, entropies, means,
variances and ``cdf``s, ``kl_divergence`` of Beta and of Poisson pairs; a small network
predicting Dirichlet concentrations (``softplus``) trained by the Dirichlet negative
log-likelihood plus its ``kl_divergence`` to a flat Dirichlet.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import (
    Beta,
    Binomial,
    Categorical,
    Dirichlet,
    Gumbel,
    LogNormal,
    OneHotCategorical,
    Poisson,
    RelaxedOneHotCategorical,
    kl_divergence,
)

LATENTS, CATEGORIES = 3, 4


def sample_gumbel(shape, eps=1e-20):
    U = torch.rand(shape)
    return -torch.log(-torch.log(U + eps) + eps)


def gumbel_softmax(logits, temperature, hard):
    y = F.softmax((logits + sample_gumbel(logits.size())) / temperature, dim=-1)
    if not hard:
        return y
    ind = y.argmax(dim=-1, keepdim=True)
    y_hard = torch.zeros_like(y).scatter_(-1, ind, 1.0)
    return (y_hard - y).detach() + y


class CategoricalVAE(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, 16), nn.ReLU(), nn.Linear(16, LATENTS * CATEGORIES))
        self.dec = nn.Sequential(nn.Linear(LATENTS * CATEGORIES, 16), nn.ReLU(), nn.Linear(16, d))

    def forward(self, x, temperature, hard):
        logits = self.enc(x).view(-1, LATENTS, CATEGORIES)
        z = gumbel_softmax(logits, temperature, hard)
        return self.dec(z.view(-1, LATENTS * CATEGORIES)), logits


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
    models = {"vae": CategoricalVAE(), "dirichlet": nn.Linear(5, 3)}
    if args.init:
        state = torch.load(args.init)
        for k, m in models.items():
            m.load_state_dict(state[k])
    if args.save_init:
        torch.save({k: m.state_dict() for k, m in models.items()}, args.save_init)
    out = []
    model = models["vae"]
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = (torch.rand(12, 8) > 0.5).double()
    tau = 1.0
    prior = Categorical(probs=torch.full((LATENTS, CATEGORIES), 1.0 / CATEGORIES))
    for step in range(args.steps):
        opt.zero_grad()
        recon, logits = model(x, tau, hard=step % 2 == 1)
        bce = F.binary_cross_entropy_with_logits(recon, x, reduction="sum") / x.size(0)
        kl = kl_divergence(Categorical(logits=logits), prior).sum(-1).mean()
        q = F.softmax(logits, dim=-1)
        kl_hand = (q * torch.log(q * CATEGORIES + 1e-20)).sum((-1, -2)).mean()
        loss = bce + kl
        loss.backward()
        opt.step()
        tau = max(tau * math.exp(-0.1 * step), 0.5)
        out += [loss.item(), bce.item(), kl.item(), kl_hand.item(), tau]
    out += [p.grad.abs().sum().item() for p in model.parameters()]

    probs = torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    onehot = OneHotCategorical(probs=probs)
    value = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    out += onehot.log_prob(value).tolist() + onehot.entropy().tolist()
    relaxed = RelaxedOneHotCategorical(torch.tensor(0.7), probs=probs)
    out += relaxed.log_prob(torch.tensor([[0.1, 0.2, 0.7], [0.5, 0.4, 0.1]])).tolist()
    beta = Beta(torch.tensor([2.0, 0.5]), torch.tensor([3.0, 0.5]))
    at = torch.tensor([0.3, 0.8])
    out += beta.log_prob(at).tolist() + beta.entropy().tolist() + beta.variance.tolist()
    other = Beta(torch.tensor([1.0, 1.0]), torch.tensor([1.0, 2.0]))
    out += kl_divergence(beta, other).tolist()
    lognormal = LogNormal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 0.5]))
    out += lognormal.log_prob(torch.tensor([0.5, 3.0])).tolist() + lognormal.mean.tolist()
    out += lognormal.entropy().tolist() + lognormal.cdf(torch.tensor([0.5, 3.0])).tolist()
    gumbel = Gumbel(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
    out += gumbel.log_prob(torch.tensor([0.5, -1.0])).tolist() + gumbel.entropy().tolist()
    out += gumbel.mean.tolist() + gumbel.variance.tolist()
    out += gumbel.cdf(torch.tensor([0.5, -1.0])).tolist()
    binom = Binomial(total_count=torch.tensor([6.0, 6.0]), probs=torch.tensor([0.3, 0.6]))
    out += binom.log_prob(torch.tensor([2.0, 5.0])).tolist() + binom.entropy().tolist()
    pois = Poisson(torch.tensor([1.5, 4.0]))
    out += pois.log_prob(torch.tensor([0.0, 3.0])).tolist()
    out += kl_divergence(pois, Poisson(torch.tensor([2.0, 2.0]))).tolist()

    # Dirichlet regression: concentrations from softplus, NLL of observed proportions
    model = models["dirichlet"]
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    feats = torch.randn(10, 5)
    props = F.softmax(feats[:, :3] * 2, dim=-1)
    for _ in range(args.steps):
        opt.zero_grad()
        conc = F.softplus(model(feats)) + 1e-3
        dist = Dirichlet(conc)
        nll = -dist.log_prob(props).mean()
        reg = kl_divergence(dist, Dirichlet(torch.ones(3))).mean()
        loss = nll + 0.1 * reg
        loss.backward()
        opt.step()
        out += [loss.item(), dist.entropy().mean().item(), dist.mean[0, 0].item()]
    out += [p.detach().abs().sum().item() for p in model.parameters()]
    return out


if __name__ == "__main__":
    main()
