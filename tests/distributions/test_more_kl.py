"""``kl_divergence`` for the pairs PyTorch registers that involve the distributions added
after the first set (and the cross-family pairs of the first set): values and gradients
against ``torch.distributions`` in float64, batched and broadcast."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.distributions as D
import torch
import torch.distributions as td
from test_more_distributions import B, _close, _pos, _prob, _real, _spd

# name -> (parameters of p, parameters of q, constructor), for the KL pairs below.
KL_DISTS: dict[str, tuple[dict, dict, Callable[[Any, dict], Any]]] = {
    "Cauchy": (
        {"loc": _real(*B), "scale": _pos(*B)},
        {"loc": _real(3), "scale": _pos(*B)},
        lambda m, p: m.Cauchy(p["loc"], p["scale"]),
    ),
    "HalfNormal": ({"scale": _pos(*B)}, {"scale": _pos(*B)}, lambda m, p: m.HalfNormal(p["scale"])),
    "LogNormal": (
        {"loc": _real(*B), "scale": _pos(*B)},
        {"loc": _real(*B), "scale": _pos(3)},
        lambda m, p: m.LogNormal(p["loc"], p["scale"]),
    ),
    "Geometric": (
        {"probs": _prob(*B)},
        {"probs": _prob(*B)},
        lambda m, p: m.Geometric(probs=p["probs"]),
    ),
    "Gumbel": (
        {"loc": _real(*B), "scale": _pos(*B)},
        {"loc": _real(*B), "scale": _pos(*B)},
        lambda m, p: m.Gumbel(p["loc"], p["scale"]),
    ),
    "Pareto": (
        {"scale": np.array([0.3, 0.6, 0.9]), "alpha": np.array([[0.8, 1.5, 3.0], [2.5, 4.0, 6.0]])},
        {"scale": np.array([0.5, 0.5, 0.2]), "alpha": _pos(*B)},
        lambda m, p: m.Pareto(p["scale"], p["alpha"]),
    ),
    "ContinuousBernoulli": (
        {"probs": np.array([[0.1, 0.4995, 0.8], [0.3, 0.6, 0.97]])},
        {"probs": _prob(*B)},
        lambda m, p: m.ContinuousBernoulli(probs=p["probs"]),
    ),
    "Normal": (
        {"loc": _real(*B), "scale": _pos(*B)},
        {"loc": _real(*B), "scale": _pos(*B)},
        lambda m, p: m.Normal(p["loc"], p["scale"]),
    ),
    "Laplace": (
        {"loc": _real(*B), "scale": _pos(*B)},
        {"loc": _real(*B), "scale": _pos(*B)},
        lambda m, p: m.Laplace(p["loc"], p["scale"]),
    ),
    "Exponential": ({"rate": _pos(*B)}, {"rate": _pos(*B)}, lambda m, p: m.Exponential(p["rate"])),
    "Gamma": (
        {"concentration": _pos(*B), "rate": _pos(*B)},
        {"concentration": _pos(*B), "rate": _pos(*B)},
        lambda m, p: m.Gamma(p["concentration"], p["rate"]),
    ),
    "Beta": (
        {"concentration1": _pos(*B), "concentration0": _pos(*B)},
        {"concentration1": _pos(*B), "concentration0": _pos(*B)},
        lambda m, p: m.Beta(p["concentration1"], p["concentration0"]),
    ),
    "Uniform": (
        {"low": np.array([0.2, 0.6, 0.05]), "high": np.array([[0.7, 0.9, 0.5], [0.4, 1.5, 0.95]])},
        # batch-shaped: PyTorch's Beta-Uniform KL indexes its result with q's shape
        {"low": np.array([[-1.0, 0.1, 0.0]] * 2), "high": np.array([[1.0, 2.0, 1.0]] * 2)},
        lambda m, p: m.Uniform(p["low"], p["high"]),
    ),
    "Poisson": ({"rate": _pos(*B)}, {"rate": _pos(*B)}, lambda m, p: m.Poisson(p["rate"])),
    "LowRankMultivariateNormal": (
        {"loc": _real(2, 4), "cov_factor": _real(2, 4, 2), "cov_diag": _pos(2, 4)},
        {"loc": _real(4), "cov_factor": _real(4, 3), "cov_diag": _pos(2, 4)},
        lambda m, p: m.LowRankMultivariateNormal(p["loc"], p["cov_factor"], p["cov_diag"]),
    ),
    "MultivariateNormal": (
        {"loc": _real(2, 4), "scale_tril": np.linalg.cholesky(_spd(4, 2))},
        {"loc": _real(4), "scale_tril": np.linalg.cholesky(_spd(4))},
        lambda m, p: m.MultivariateNormal(p["loc"], scale_tril=p["scale_tril"]),
    ),
    "Bernoulli": ({"probs": _prob(*B)}, {"probs": _prob(*B)}, lambda m, p: m.Bernoulli(p["probs"])),
}

KL_PAIRS = [
    ("Cauchy", "Cauchy"),
    ("HalfNormal", "HalfNormal"),
    ("LogNormal", "LogNormal"),
    ("Geometric", "Geometric"),
    ("Gumbel", "Gumbel"),
    ("Gumbel", "Normal"),
    ("Normal", "Gumbel"),
    ("Exponential", "Gumbel"),
    ("Gamma", "Gumbel"),
    ("Uniform", "Gumbel"),
    ("Pareto", "Pareto"),
    ("Pareto", "Exponential"),
    ("Pareto", "Gamma"),
    ("Pareto", "Normal"),
    ("Uniform", "Pareto"),
    ("ContinuousBernoulli", "ContinuousBernoulli"),
    ("Beta", "ContinuousBernoulli"),
    ("Uniform", "ContinuousBernoulli"),
    ("ContinuousBernoulli", "Exponential"),
    ("ContinuousBernoulli", "Normal"),
    ("ContinuousBernoulli", "Uniform"),
    ("Normal", "Pareto"),
    ("Gumbel", "Beta"),
    ("Laplace", "ContinuousBernoulli"),
    ("Pareto", "Uniform"),
    ("Poisson", "Bernoulli"),
    ("Bernoulli", "Poisson"),
    ("Beta", "Exponential"),
    ("Beta", "Gamma"),
    ("Beta", "Normal"),
    ("Beta", "Uniform"),
    ("Exponential", "Gamma"),
    ("Exponential", "Normal"),
    ("Gamma", "Exponential"),
    ("Gamma", "Normal"),
    ("Laplace", "Normal"),
    ("Normal", "Laplace"),
    ("Uniform", "Beta"),
    ("Uniform", "Exponential"),
    ("Uniform", "Gamma"),
    ("Uniform", "Normal"),
    ("Exponential", "Uniform"),
    ("LowRankMultivariateNormal", "LowRankMultivariateNormal"),
    ("LowRankMultivariateNormal", "MultivariateNormal"),
    ("MultivariateNormal", "LowRankMultivariateNormal"),
]


@pytest.mark.parametrize(("p", "q"), KL_PAIRS)
def test_kl_divergence_like_torch(backend: str, p: str, q: str) -> None:
    params_p, _, build_p = KL_DISTS[p]
    _, params_q, build_q = KL_DISTS[q]
    pp_ours = {k: tw.tensor(v, requires_grad=True) for k, v in params_p.items()}
    pp_theirs = {k: torch.tensor(v, requires_grad=True) for k, v in params_p.items()}
    kl_ours = D.kl_divergence(
        build_p(D, pp_ours), build_q(D, {k: tw.tensor(v) for k, v in params_q.items()})
    )
    kl_theirs = td.kl_divergence(
        build_p(td, pp_theirs), build_q(td, {k: torch.tensor(v) for k, v in params_q.items()})
    )
    _close(kl_ours, kl_theirs, rtol=1e-8)
    if not kl_theirs.requires_grad:  # infinite throughout: a constant
        assert not kl_ours.requires_grad
        return
    kl_ours[kl_ours.isfinite()].sum().backward()
    kl_theirs[kl_theirs.isfinite()].sum().backward()
    for k in pp_ours:
        ours_grad = pp_ours[k].grad
        theirs_grad = pp_theirs[k].grad
        if theirs_grad is None:
            assert ours_grad is None or not bool(ours_grad.any()), k
        else:
            if k == "scale_tril":  # the lower triangle is the parameter
                ours_grad, theirs_grad = ours_grad.tril(), theirs_grad.tril()
            # trigamma (the derivative of digamma) is good to about 1e-10 absolute
            _close(ours_grad, theirs_grad, rtol=1e-7, atol=1e-9)


def test_kl_of_transformed_distributions_needs_the_same_transforms() -> None:
    p = D.Weibull(tw.tensor([1.0]), tw.tensor([2.0]))
    q = D.Weibull(tw.tensor([1.5]), tw.tensor([2.0]))
    with pytest.raises(NotImplementedError):
        td.kl_divergence(
            td.Weibull(torch.tensor([1.0]), torch.tensor([2.0])),
            td.Weibull(torch.tensor([1.5]), torch.tensor([2.0])),
        )
    with pytest.raises(NotImplementedError, match="same transforms"):
        D.kl_divergence(p, q)


def test_wishart_kl_is_the_bregman_divergence_like_torch(backend: str) -> None:
    """KL between two Wisharts goes through ExponentialFamily's Bregman divergence of the
    log normalizer, as in PyTorch; the gradient reaches q's parameters."""
    cov_p, cov_q = _spd(3, 2), _spd(3, 2)
    df_p, df_q = np.array([4.0, 6.0]), np.array([5.0, 3.5])
    q_cov = tw.tensor(cov_q, requires_grad=True)
    q_cov_theirs = torch.tensor(cov_q, requires_grad=True)
    ours = D.kl_divergence(
        D.Wishart(tw.tensor(df_p), covariance_matrix=tw.tensor(cov_p)),
        D.Wishart(tw.tensor(df_q), covariance_matrix=q_cov),
    )
    theirs = td.kl_divergence(
        td.Wishart(torch.tensor(df_p), covariance_matrix=torch.tensor(cov_p)),
        td.Wishart(torch.tensor(df_q), covariance_matrix=q_cov_theirs),
    )
    _close(ours, theirs, rtol=1e-9)
    ours.sum().backward()
    theirs.sum().backward()
    # the symmetric part: both sides differentiate through a Cholesky factorization
    sym = lambda g: (g + g.mT) / 2  # noqa: E731
    _close(sym(q_cov.grad), sym(q_cov_theirs.grad), rtol=1e-8)


def test_exponential_family_entropy_matches_the_closed_forms(backend: str) -> None:
    members = [
        D.ContinuousBernoulli(tw.tensor([0.2, 0.4995, 0.9])),
        D.Wishart(tw.tensor([4.0, 6.0]), covariance_matrix=tw.tensor(_spd(3, 2))),
    ]
    for member in members:
        assert isinstance(member, D.ExponentialFamily)
        bregman = D.ExponentialFamily.entropy(member)
        np.testing.assert_allclose(
            np.asarray(bregman.detach()), np.asarray(member.entropy()), rtol=1e-9, atol=1e-13
        )
    with pytest.raises(NotImplementedError, match="different exponential families"):
        D.kl_divergence(*members[::-1][:1], members[0])
