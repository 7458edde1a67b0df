"""A Gaussian mixture fitted by expectation-maximisation in plain torch (after the
"GMM in PyTorch" gists and ldeecke/gmm-torch's ``GaussianMixture``), then by gradient
ascent on the same likelihood through ``torch.distributions``, in float64.

EM: initial means from ``torch.randperm`` rows, the E-step by ``MultivariateNormal(means,
covariance_matrix=covs).log_prob(x.unsqueeze(1))`` (batched over components) plus ``log``
weights, normalised with ``torch.logsumexp``; the M-step by responsibility sums, ``einsum``
weighted means and covariances, a ``torch.eye`` ridge; the log-likelihood per iteration (it
must not fall). Then a ``MixtureSameFamily(Categorical(logits), MultivariateNormal(loc,
scale_tril))`` whose ``scale_tril`` is built from free parameters (``tril(-1)`` plus
``diag_embed(softplus(...))``) is trained a few Adam steps from the EM means and identity
covariances (``--param precision``: the components given by ``precision_matrix`` built as
``L @ L.mT`` of such a factor instead), and its ``mean``/``variance`` and component posteriors
are read. Returns the log-likelihoods, the fitted weights and means, and the gradient-fitted
values.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical, MixtureSameFamily, MultivariateNormal


def make_data(n_per=20):
    centers = torch.tensor([[0.0, 0.0], [3.0, 1.0], [-1.0, 3.0]])
    scales = torch.tensor([[[0.5, 0.0], [0.2, 0.3]], [[0.3, 0.0], [0.0, 0.6]],
                           [[0.4, 0.0], [-0.2, 0.4]]])  # fmt: skip
    noise = torch.randn(3, n_per, 2)
    return (centers.unsqueeze(1) + noise @ scales.transpose(1, 2)).reshape(-1, 2)


def em(x, k, iterations, reg=1e-6):
    n, d = x.shape
    means = x[torch.randperm(n)[:k]].clone()
    covs = torch.eye(d).expand(k, d, d).clone()
    weights = torch.full((k,), 1.0 / k)
    history = []
    for _ in range(iterations):
        log_p = MultivariateNormal(means, covariance_matrix=covs).log_prob(x.unsqueeze(1))
        log_p = log_p + weights.log()
        log_norm = torch.logsumexp(log_p, dim=1, keepdim=True)
        history.append(log_norm.mean().item())
        resp = (log_p - log_norm).exp()
        nk = resp.sum(0) + 1e-10
        means = torch.einsum("nk,nd->kd", resp, x) / nk.unsqueeze(1)
        diff = x.unsqueeze(1) - means.unsqueeze(0)
        covs = torch.einsum("nk,nkd,nke->kde", resp, diff, diff) / nk.view(k, 1, 1)
        covs = covs + reg * torch.eye(d)
        weights = nk / n
    return means, covs, weights, history


class GradientMixture(nn.Module):
    def __init__(self, means, covs, weights, param="scale_tril"):
        super().__init__()
        self.param = param
        chol = torch.linalg.cholesky(covs if param == "scale_tril" else torch.inverse(covs))
        self.logits = nn.Parameter(weights.log())
        self.loc = nn.Parameter(means.clone())
        self.off_diag = nn.Parameter(chol.tril(-1))
        diag = torch.diagonal(chol, dim1=-2, dim2=-1)
        self.raw_diag = nn.Parameter(torch.log(torch.expm1(diag)))

    def distribution(self):
        tril = self.off_diag.tril(-1) + torch.diag_embed(F.softplus(self.raw_diag))
        if self.param == "scale_tril":
            components = MultivariateNormal(self.loc, scale_tril=tril)
        else:
            components = MultivariateNormal(self.loc, precision_matrix=tril @ tril.mT)
        return MixtureSameFamily(Categorical(logits=self.logits), components)


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--param", choices=["scale_tril", "precision"], default="scale_tril")
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
    x = make_data()
    if args.save_init:
        torch.save({}, args.save_init)  # EM starts from the data: no weights to share
    means, covs, weights, history = em(x, 3, args.iterations)
    out = history + [all(b >= a - 1e-12 for a, b in zip(history, history[1:]))]
    order = means[:, 0].argsort()
    out += weights[order].tolist() + means[order].flatten().tolist()
    # (from the EM means only: at EM's optimum the gradient is all cancellation, and Adam's
    # first steps, about lr * sign(gradient), would follow its rounding)
    model = GradientMixture(
        means, torch.eye(2).expand(3, 2, 2), torch.full((3,), 1 / 3), args.param
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(args.steps):
        loss = -model.distribution().log_prob(x).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out += [loss.item(), model.raw_diag.grad.abs().sum().item()]
    with torch.no_grad():
        mix = model.distribution()
        out += mix.mean.tolist() + mix.variance.tolist()
        posterior = mix.component_distribution.log_prob(x[:4].unsqueeze(1))
        posterior = (posterior + mix.mixture_distribution.logits).softmax(-1)
        out += posterior[:, order].flatten().tolist()
    return out
