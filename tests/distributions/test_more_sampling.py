"""Draws of the distributions added after the first set: reparameterized gradients by
finite differences under a fixed seed (pathwise draws) or on average (implicit gamma
draws), sample moments and frequencies within 6 standard errors, seeding."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.distributions as D
import torch
import torch.distributions as td
from test_more_distributions import _close

# Reparameterized draws that are smooth functions of the parameters for a fixed seed: the
# gradient of their sum against central differences with the same seed.
PATHWISE = {
    "Cauchy": lambda p: D.Cauchy(p[0], p[1]),
    "HalfNormal": lambda p: D.HalfNormal(p[0]),
    "HalfCauchy": lambda p: D.HalfCauchy(p[0]),
    "LogNormal": lambda p: D.LogNormal(p[0], p[1]),
    "Gumbel": lambda p: D.Gumbel(p[0], p[1]),
    "Weibull": lambda p: D.Weibull(p[0], p[1]),
    "Pareto": lambda p: D.Pareto(p[0], p[1]),
    "Kumaraswamy": lambda p: D.Kumaraswamy(p[0], p[1]),
    "ContinuousBernoulli": lambda p: D.ContinuousBernoulli(logits=p[0]),
    "GeneralizedPareto": lambda p: D.GeneralizedPareto(p[0], p[1], p[2]),
    "RelaxedBernoulli": lambda p: D.RelaxedBernoulli(tw.tensor(0.5), logits=p[0]),
    "LogisticNormal": lambda p: D.LogisticNormal(p[0], p[1]),
}
PATHWISE_AT = {
    "GeneralizedPareto": [np.array([0.1, -0.2]), np.array([0.7, 1.3]), np.array([-0.3, 0.4])]
}


@pytest.mark.parametrize("name", sorted(PATHWISE))
def test_rsample_gradients_match_finite_differences(backend: str, name: str) -> None:
    at = PATHWISE_AT.get(name, [np.array([0.8, 1.7]), np.array([1.2, 0.6]), np.array([1.1, 0.9])])
    params = [tw.tensor(a, requires_grad=True) for a in at]
    tw.manual_seed(3)
    PATHWISE[name](params).rsample((3,)).sum().backward()
    for i, a in enumerate(at):
        if params[i].grad is None:
            continue
        for j in range(a.size):
            values = []
            for step in (1e-6, -1e-6):
                shifted = [p.detach().clone() for p in params]
                bumped = a.copy()
                bumped[j] += step
                shifted[i] = tw.tensor(bumped)
                tw.manual_seed(3)
                values.append(PATHWISE[name](shifted).rsample((3,)).sum().item())
            expected = (values[0] - values[1]) / 2e-6
            assert abs(params[i].grad[j].item() - expected) <= 1e-5 * (1 + abs(expected))


# Draws through gamma draws (implicit reparameterization): the mean of the per-draw
# gradients of one parameter against the derivative of the distribution's mean.
IMPLICIT = {
    # E[X] = rate / (a - 1): d/da = -rate / (a - 1)^2
    "InverseGamma": (lambda a: D.InverseGamma(a, 2.0), 4.0, lambda a: -2.0 / (a - 1) ** 2),
    # E[X] = df2 / (df2 - 2): d/d df2 = -2 / (df2 - 2)^2
    "FisherSnedecor": (lambda d: D.FisherSnedecor(3.0, d), 9.0, lambda d: -2.0 / (d - 2) ** 2),
    # E[X^2] = df / (df - 2) for StudentT(df): d/d df = -2 / (df - 2)^2
    "StudentT": (lambda d: D.StudentT(d), 7.0, lambda d: -2.0 / (d - 2) ** 2),
}


@pytest.mark.parametrize("name", sorted(IMPLICIT))
def test_implicit_rsample_gradients_are_unbiased(backend: str, name: str) -> None:
    build, at, derivative = IMPLICIT[name]
    n = 20000
    param = tw.full((n,), at, requires_grad=True)
    draws = build(param).rsample()
    (draws.pow(2) if name == "StudentT" else draws).sum().backward()
    per_draw = np.asarray(param.grad, dtype=np.float64)
    bound = 6 * per_draw.std() / np.sqrt(n)
    assert abs(per_draw.mean() - derivative(at)) < bound


# Sample means within 6 standard errors (variances finite); heavy tails by their cdf.
SAMPLED_MEANS = {
    "StudentT": lambda: D.StudentT(tw.tensor([5.0, 9.0]), tw.tensor([0.5, -1.0]), 2.0),
    "HalfNormal": lambda: D.HalfNormal(tw.tensor([0.5, 3.0])),
    "LogNormal": lambda: D.LogNormal(tw.tensor([0.0, -1.0]), tw.tensor([0.3, 0.5])),
    "Gumbel": lambda: D.Gumbel(tw.tensor([0.5, -1.0]), tw.tensor([1.0, 3.0])),
    "Geometric": lambda: D.Geometric(tw.tensor([0.2, 0.7])),
    "NegativeBinomial": lambda: D.NegativeBinomial(tw.tensor([3.0, 0.5]), tw.tensor([0.4, 0.6])),
    "Multinomial": lambda: D.Multinomial(6, tw.tensor([0.2, 0.3, 0.5])),
    "Weibull": lambda: D.Weibull(tw.tensor([1.0, 2.0]), tw.tensor([0.8, 3.0])),
    "Pareto": lambda: D.Pareto(tw.tensor([1.0, 0.5]), tw.tensor([5.0, 9.0])),
    "FisherSnedecor": lambda: D.FisherSnedecor(tw.tensor([4.0, 10.0]), tw.tensor([12.0, 20.0])),
    "Kumaraswamy": lambda: D.Kumaraswamy(tw.tensor([0.5, 3.0]), tw.tensor([2.0, 0.7])),
    "ContinuousBernoulli": lambda: D.ContinuousBernoulli(tw.tensor([0.1, 0.8])),
    "InverseGamma": lambda: D.InverseGamma(tw.tensor([6.0, 9.0]), tw.tensor([1.0, 3.0])),
    "GeneralizedPareto": lambda: D.GeneralizedPareto(0.0, tw.tensor([1.0, 2.0]), -0.3),
    "RelaxedBernoulli": lambda: D.LogitRelaxedBernoulli(tw.tensor(2.0), tw.tensor([0.3, 0.6])),
}


@pytest.mark.parametrize("name", sorted(SAMPLED_MEANS))
def test_sample_means_match_the_distribution(backend: str, name: str) -> None:
    dist = SAMPLED_MEANS[name]()
    n = 40000
    draws = np.asarray(dist.sample((n,)), dtype=np.float64)
    if name == "RelaxedBernoulli":  # the logit-space base: logistic draws of this mean
        mean = np.asarray(dist.logits) / 2.0
        var = np.full(2, np.pi**2 / 3 / 4.0)
    else:
        mean, var = np.asarray(dist.mean), np.asarray(dist.variance)
    np.testing.assert_array_less(np.abs(draws.mean(0) - mean), 6 * np.sqrt(var / n))


SAMPLED_CDFS = {
    "Cauchy": lambda: D.Cauchy(tw.tensor([0.5, -1.0]), tw.tensor([1.0, 3.0])),
    "HalfCauchy": lambda: D.HalfCauchy(tw.tensor([0.5, 3.0])),
    "Pareto": lambda: D.Pareto(tw.tensor([1.0, 0.5]), tw.tensor([0.7, 1.5])),
}


@pytest.mark.parametrize("name", sorted(SAMPLED_CDFS))
def test_heavy_tailed_sample_frequencies_match_the_cdf(backend: str, name: str) -> None:
    dist = SAMPLED_CDFS[name]()
    n = 40000
    draws = np.asarray(dist.sample((n,)), dtype=np.float64)
    for q in (0.1, 0.5, 0.9):
        x = dist.icdf(tw.full((2,), q))
        freq = (draws <= np.asarray(x)).mean(0)
        assert np.all(np.abs(freq - q) < 6 * np.sqrt(q * (1 - q) / n))


def test_von_mises_circular_mean_matches(backend: str) -> None:
    """E[cos(X - loc)] = I1(k) / I0(k) = 1 - circular variance; |cos| <= 1 bounds the
    error of the sample mean by 6 / sqrt(n)."""
    dist = D.VonMises(tw.tensor([0.5, -2.5, 3.0]), tw.tensor([0.2, 2.0, 20.0]))
    n = 40000
    draws = np.asarray(dist.sample((n,)), dtype=np.float64)
    assert np.all(np.abs(draws) <= np.pi)
    loc, var = np.asarray(dist.loc), np.asarray(dist.variance)
    np.testing.assert_array_less(np.abs(np.cos(draws - loc).mean(0) - (1 - var)), 6 / np.sqrt(n))
    np.testing.assert_array_less(np.abs(np.sin(draws - loc).mean(0)), 6 / np.sqrt(n))


def test_wishart_sample_moments_and_gradients(backend: str) -> None:
    """Entry means within 6 standard errors of df * cov; d/dL of the draws is pathwise
    (central differences with the same seed); the mean of the per-draw gradients in df
    is d/d df E[trace X] = trace(cov)."""
    scale_tril = np.array([[1.0, 0.0, 0.0], [0.5, 0.8, 0.0], [-0.3, 0.2, 1.2]])
    cov = scale_tril @ scale_tril.T
    dist = D.Wishart(tw.tensor(5.0), scale_tril=tw.tensor(scale_tril))
    n = 20000
    draws = np.asarray(dist.sample((n,)), dtype=np.float64)
    np.testing.assert_allclose(np.asarray(dist.mean), 5.0 * cov, rtol=1e-12)
    bound = 6 * np.sqrt(np.asarray(dist.variance) / n)
    np.testing.assert_array_less(np.abs(draws.mean(0) - 5.0 * cov), bound)

    lower = tw.tensor(scale_tril, requires_grad=True)
    tw.manual_seed(5)
    D.Wishart(tw.tensor(5.0), scale_tril=lower).rsample((4,)).sum().backward()
    for i, j in [(0, 0), (1, 0), (2, 1), (2, 2)]:
        values = []
        for step in (1e-6, -1e-6):
            bumped = scale_tril.copy()
            bumped[i, j] += step
            tw.manual_seed(5)
            values.append(D.Wishart(tw.tensor(5.0), scale_tril=tw.tensor(bumped)).rsample((4,)))
        expected = (values[0].sum().item() - values[1].sum().item()) / 2e-6
        assert abs(lower.grad[i, j].item() - expected) <= 1e-5 * (1 + abs(expected))

    df = tw.full((n,), 5.0, requires_grad=True)
    draws = D.Wishart(df, scale_tril=tw.tensor(scale_tril)).rsample()
    draws.diagonal(dim1=-2, dim2=-1).sum().backward()
    per_draw = np.asarray(df.grad, dtype=np.float64)
    assert abs(per_draw.mean() - np.trace(cov)) < 6 * per_draw.std() / np.sqrt(n)


def test_lkj_cholesky_correlations_have_the_marginal_variance(backend: str) -> None:
    """Off-diagonal correlations of LKJ(d, eta) are 2 B - 1 for B ~ Beta(a, a) with
    a = eta - 1 + d / 2: mean 0 and E[r^2] = 1 / (2 a + 1); |r| <= 1 bounds the standard
    error by 1 / sqrt(n)."""
    d, n = 4, 20000
    eta = np.array([0.5, 1.0, 3.0])
    factor = np.asarray(D.LKJCholesky(d, tw.tensor(eta)).sample((n,)), dtype=np.float64)
    corr = factor @ np.swapaxes(factor, -1, -2)
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, rtol=1e-12)
    r = corr[..., 0, 1], corr[..., 1, 3]
    a = eta - 1 + d / 2
    for rs in r:
        np.testing.assert_array_less(np.abs(rs.mean(0)), 6 / np.sqrt(n))
        np.testing.assert_array_less(np.abs((rs**2).mean(0) - 1 / (2 * a + 1)), 6 / np.sqrt(n))


def test_samples_repeat_under_manual_seed(backend: str) -> None:
    for build in (
        lambda: D.StudentT(tw.ones(3) * 3).sample((4,)),
        lambda: D.VonMises(tw.zeros(3), 1.0).sample((4,)),
        lambda: D.NegativeBinomial(tw.ones(3), 0.5).sample((4,)),
        lambda: D.Gumbel(tw.zeros(3), 1.0).sample((4,)),
    ):
        tw.manual_seed(11)
        first = build()
        tw.manual_seed(11)
        assert tw.equal(first, build())


def test_straight_through_passes_the_gradient_of_probs(backend: str) -> None:
    logits = tw.tensor([0.3, -0.2, 1.0], requires_grad=True)
    theirs_logits = torch.tensor([0.3, -0.2, 1.0], dtype=torch.float64, requires_grad=True)
    weights = [1.0, 2.0, 3.0]
    draw = D.OneHotCategoricalStraightThrough(logits=logits).rsample()
    (draw * tw.tensor(weights)).sum().backward()
    theirs = td.OneHotCategoricalStraightThrough(logits=theirs_logits)
    (theirs.rsample() * torch.tensor(weights, dtype=torch.float64)).sum().backward()
    assert float(draw.sum().item()) == 1.0
    _close(logits.grad, theirs_logits.grad)
