"""``kl_divergence(p, q)`` and ``register_kl``: KL(p || q) in closed form for the registered
pairs of distribution types, the most specific registration winning (PyTorch's rule)."""

from __future__ import annotations

import math
from typing import Any, Callable

from tensorweaver.distributions.bernoulli import Bernoulli
from tensorweaver.distributions.categorical import Categorical, OneHotCategorical
from tensorweaver.distributions.cauchy import Cauchy
from tensorweaver.distributions.continuous_bernoulli import ContinuousBernoulli
from tensorweaver.distributions.counts import Binomial, Poisson
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.exponential import Exponential
from tensorweaver.distributions.exponential_family import ExponentialFamily
from tensorweaver.distributions.gamma import Beta, Dirichlet, Gamma
from tensorweaver.distributions.geometric import Geometric
from tensorweaver.distributions.gumbel import EULER_GAMMA, Gumbel
from tensorweaver.distributions.half import HalfNormal
from tensorweaver.distributions.independent import Independent, sum_rightmost
from tensorweaver.distributions.laplace import Laplace
from tensorweaver.distributions.multivariate_normal import (
    LowRankMultivariateNormal,
    MultivariateNormal,
    batch_mahalanobis,
)
from tensorweaver.distributions.normal import Normal
from tensorweaver.distributions.pareto import Pareto
from tensorweaver.distributions.transformed_distribution import TransformedDistribution
from tensorweaver.distributions.uniform import Uniform
from tensorweaver.linalg import solve_triangular
from tensorweaver.nn.functional import softplus
from tensorweaver.ops.creation import full_like
from tensorweaver.ops.special import digamma, lgamma, xlogy
from tensorweaver.ops.spellings import broadcast_shapes
from tensorweaver.tensor import Tensor

_KL_REGISTRY: dict[tuple[type, type], Callable[[Any, Any], Tensor]] = {}

_INF = float("inf")


def register_kl(type_p: type, type_q: type) -> Callable[[Callable], Callable]:
    """Decorator registering ``fn(p, q)`` as KL(p || q) for ``type_p`` and ``type_q``."""
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not (isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fn
        return fn

    return decorator


def _dispatch(type_p: type, type_q: type) -> Callable | None:
    """The registration for the closest pair of superclasses (by MRO position)."""
    best, best_rank = None, None
    for (super_p, super_q), fn in _KL_REGISTRY.items():
        if issubclass(type_p, super_p) and issubclass(type_q, super_q):
            rank = (type_p.__mro__.index(super_p), type_q.__mro__.index(super_q))
            if best_rank is None or rank < best_rank:
                best, best_rank = fn, rank
    return best


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), batched over the distributions' batch shape."""
    fn = _dispatch(type(p), type(q))
    if fn is None:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
            f"{type(q).__name__}"
        )
    return fn(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = t1.masked_fill(q.probs == 0, _INF).masked_fill(p.probs == 0, 0.0)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = t2.masked_fill(q.probs == 1, _INF).masked_fill(p.probs == 1, 0.0)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = t.masked_fill((q.probs == 0).expand_as(t), _INF)
    t = t.masked_fill((p.probs == 0).expand_as(t), 0.0)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return result.masked_fill((q.low > p.low) | (q.high < p.high), _INF)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return t1 + t2 + t3 - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = lgamma(sum_p) - lgamma(sum_q)
    t2 = (lgamma(p.concentration) - lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = digamma(p.concentration) - digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool((p.total_count < q.total_count).any().item()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    # p reaches counts above q's total_count, where q has no mass
    return kl.masked_fill(p.total_count > q.total_count, _INF)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two Multivariate Normals with different event shapes "
            "cannot be computed"
        )
    half_term1 = q._half_log_det() - p._half_log_det()
    lower_q, lower_p = q._unbroadcasted_scale_tril, p._unbroadcasted_scale_tril
    batch = broadcast_shapes(lower_q.shape[:-2], lower_p.shape[:-2])
    lower_q = lower_q.expand(batch + lower_q.shape[-2:])
    lower_p = lower_p.expand(batch + lower_p.shape[-2:])
    term2 = solve_triangular(lower_q, lower_p, upper=False).pow(2).sum((-2, -1))
    term3 = batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    n = p.event_shape[0]
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError(
            "KL between Independent distributions with different reinterpreted_batch_ndims "
            "is not implemented"
        )
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """The Bregman divergence of the family's log normalizer F: F(theta_q) - F(theta_p) -
    <theta_q - theta_p, grad F(theta_p)>."""
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families "
            f"({type(p).__name__}, {type(q).__name__}) cannot be computed using Bregman "
            "divergences, and no KL for this pair is registered (register_kl)"
        )
    p_params, p_value, gradients = p._log_normalizer_and_gradients()
    q_params = q._natural_params
    result = q._log_normalizer(*q_params) - p_value
    for p_param, q_param, gradient in zip(p_params, q_params, gradients):
        result = result - sum_rightmost((q_param - p_param) * gradient, len(q.event_shape))
    return result


def _trace_xxt(x: Tensor) -> Tensor:
    """trace(X X^T) over the last two dimensions, batched."""
    return x.pow(2).sum((-2, -1))


def _lowrank_mahalanobis(q: LowRankMultivariateNormal, x: Tensor) -> Tensor:
    """(x - q.loc)^T cov_q^-1 (x - q.loc), read off q's log density (which computes it by
    the Woodbury identity) rather than written a second time."""
    k = q.event_shape[0]
    return -2 * q.log_prob(x) - k * math.log(2 * math.pi) - q._log_det()


def _lowrank_inverse_factor(q: LowRankMultivariateNormal) -> Tensor:
    """A with cov_q^-1 = D^-1 - A^T A (Woodbury): C^-1 W^T D^-1 for the capacitance's
    Cholesky factor C."""
    w, d = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    wt_dinv = w.mT / d.unsqueeze(-2)
    c = q._capacitance_tril
    batch = broadcast_shapes(c.shape[:-2], wt_dinv.shape[:-2])
    return solve_triangular(
        c.expand(batch + c.shape[-2:]), wt_dinv.expand(batch + wt_dinv.shape[-2:]), upper=False
    )


def _same_event(p: Distribution, q: Distribution) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two (Low Rank) Multivariate Normals with different event "
            "shapes cannot be computed"
        )


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p: LowRankMultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _same_event(p, q)
    term1 = q._log_det() - p._log_det()
    a = _lowrank_inverse_factor(q)
    p_w, p_d = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    q_d = q._unbroadcasted_cov_diag
    term21 = (p_d / q_d).sum(-1)
    term22 = _trace_xxt(p_w * q_d.rsqrt().unsqueeze(-1))
    term23 = _trace_xxt(a * p_d.sqrt().unsqueeze(-2))
    term24 = _trace_xxt(a @ p_w)
    term2 = term21 + term22 - term23 - term24
    return 0.5 * (term1 + term2 + _lowrank_mahalanobis(q, p.loc) - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p: MultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _same_event(p, q)
    term1 = q._log_det() - 2 * p._half_log_det()
    lower = p._unbroadcasted_scale_tril
    term21 = _trace_xxt(lower * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term22 = _trace_xxt(_lowrank_inverse_factor(q) @ lower)
    term2 = term21 - term22
    return 0.5 * (term1 + term2 + _lowrank_mahalanobis(q, p.loc) - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p: LowRankMultivariateNormal, q: MultivariateNormal) -> Tensor:
    _same_event(p, q)
    term1 = 2 * q._half_log_det() - p._log_det()
    term3 = batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    n = p.event_shape[0]
    lower = q._unbroadcasted_scale_tril
    p_w = p._unbroadcasted_cov_factor
    batch = broadcast_shapes(lower.shape[:-2], p_w.shape[:-2])
    lower = lower.expand(batch + (n, n))
    p_w = p_w.expand(batch + p_w.shape[-2:])
    p_d = p._unbroadcasted_cov_diag.sqrt().diag_embed().expand(batch + (n, n))
    term21 = _trace_xxt(solve_triangular(lower, p_w, upper=False))
    term22 = _trace_xxt(solve_triangular(lower, p_d, upper=False))
    return 0.5 * (term1 + term21 + term22 + term3 - n)


def _x_log_x(x: Tensor) -> Tensor:
    return xlogy(x, x)  # 0 at x = 0


# --- pairs among the first distributions across families, PyTorch's formulas --------------


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    a, b = p.concentration1, p.concentration0
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (digamma(a) - digamma(a + b))
    return -p.entropy() + t2 - t3 + q.rate * a / (a + b)


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    mean = p.mean
    var = q.scale.pow(2)
    t2 = 0.5 * (var * 2 * math.pi).log()
    t3 = (mean * (1 - mean) / (p.concentration1 + p.concentration0 + 1) + mean.pow(2)) * 0.5
    return -p.entropy() + t2 + (t3 - q.loc * mean + q.loc.pow(2) * 0.5) / var


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    return result.masked_fill((q.low > 0) | (q.high < 1), _INF)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    ratio = q.rate / p.rate
    t1 = -q.concentration * ratio.log()
    return t1 + ratio + lgamma(q.concentration) + q.concentration * EULER_GAMMA - (1 + EULER_GAMMA)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    var = q.scale.pow(2)
    rate_sqr = p.rate.pow(2)
    t1 = 0.5 * (rate_sqr * var * 2 * math.pi).log()
    return t1 - 1 + (rate_sqr.reciprocal() - q.loc / p.rate + q.loc.pow(2) * 0.5) / var


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    a = p.concentration
    var = q.scale.pow(2)
    beta_sqr = p.rate.pow(2)
    t1 = 0.5 * (beta_sqr * var * 2 * math.pi).log() - a - lgamma(a)
    t2 = 0.5 * (a.pow(2) + a) / beta_sqr
    t3 = q.loc * a / p.rate
    return t1 + (a - 1) * digamma(a) + (t2 - t3 + 0.5 * q.loc.pow(2)) / var


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Tensor:
    var = q.scale.pow(2)
    ratio = p.scale.pow(2) / var
    t1 = 0.5 * (2 * ratio / math.pi).log()
    t2 = 0.5 * p.loc.pow(2) - p.loc * q.loc + 0.5 * q.loc.pow(2)
    return -t1 + ratio + t2 / var - 1


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    loc_diff = p.loc - q.loc
    standardized = loc_diff / p.scale
    t1 = (p.scale / q.scale).log()
    t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * standardized.pow(2)).exp()
    t3 = loc_diff * (math.sqrt(0.5) * standardized).erf()
    return -t1 + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    width = p.high - p.low
    a, b = q.concentration1, q.concentration0
    t2 = (a - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t3 = (b - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    t4 = lgamma(a) + lgamma(b) - lgamma(a + b)
    result = t3 + t4 - width.log() - t2
    return result.masked_fill((p.high > 1) | (p.low < 0), _INF)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return result.masked_fill(p.low < 0, _INF)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    width = p.high - p.low
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    result = -width.log() + t2 + t3 + q.rate * (p.high + p.low) / 2
    return result.masked_fill(p.low < 0, _INF)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (width.pow(2) / 12 + t3) / q.scale.pow(2)


# --- pairs with the distributions added later (Cauchy to Pareto), PyTorch's formulas ------


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t3 = (ct2 + lgamma(1 + ct1) - ct3).exp()
    return t1 + ct1 * EULER_GAMMA + t3 - (1 + EULER_GAMMA)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * EULER_GAMMA - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (EULER_GAMMA + 1)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    mean_ratio = p.loc / q.scale
    var_ratio = (p.scale / q.scale).pow(2)
    loc_ratio = q.loc / q.scale
    t3 = (-mean_ratio + 0.5 * var_ratio + loc_ratio).exp()
    return -0.5 * var_ratio.log() + mean_ratio - loc_ratio + t3 - 0.5 * (1 + math.log(2 * math.pi))


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    product = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    t2 = loc_ratio.exp() * product / (product + 1)
    return product.log() - 1 - loc_ratio + t2 + product.reciprocal()


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    a = p.concentration
    product = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    t1 = (a - 1) * digamma(a) - lgamma(a) - a
    t2 = product.log() + a / product
    t3 = loc_ratio.exp() * (1 + product.reciprocal()).pow(-a) - loc_ratio
    return t1 + t2 + t3


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    common = q.scale / (p.high - p.low)
    high_diff = (p.high - q.loc) / q.scale
    low_diff = (p.low - q.loc) / q.scale
    t1 = common.log() + 0.5 * (high_diff + low_diff)
    return t1 - common * ((-high_diff).exp() - (-low_diff).exp())


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return result.masked_fill(p.scale < q.scale, _INF)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    product = p.scale * q.rate
    t3 = p.alpha * product / (p.alpha - 1)
    result = (p.alpha / product).log() - p.alpha.reciprocal() + t3 - 1
    return result.masked_fill(p.alpha <= 1, _INF)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    common = p.scale.log() + p.alpha.reciprocal()
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    result = p.alpha.log() - common + t2 + (1 - q.concentration) * common + t4 - 1
    return result.masked_fill(p.alpha <= 1, _INF)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    two_var = 2 * q.scale.pow(2)
    common = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc).pow(2)
    result = t1 - p.alpha.reciprocal() + (t3 + t4) / two_var - 1
    return result.masked_fill(p.alpha <= 2, _INF)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return (t2 * (q.alpha + 1) - t1).masked_fill(p.low < q.scale, _INF)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._log_norm() + (-p.probs).log1p()
    return t1 + t2 - q._log_norm() - (-q.probs).log1p()


def _cross_entropy_to_cb(p: Distribution, q: ContinuousBernoulli) -> Tensor:
    """KL(p || q) for a p on [0, 1] with an entropy and a mean."""
    return -p.entropy() - p.mean * q.logits - (-q.probs).log1p() - q._log_norm()


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return _cross_entropy_to_cb(p, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    result = _cross_entropy_to_cb(p, q)
    return result.masked_fill((p.high >= 1) | (p.low <= 0), _INF)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).square()) + q.scale.log()
    t3 = (p.variance + p.mean.square() - 2.0 * q.loc * p.mean) / (2.0 * q.scale.square())
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    return result.masked_fill((q.low >= 0) | (q.high <= 1), _INF)


def _register_infinite(type_p: type, type_q: type, param: str) -> None:
    """KL(p || q) is infinite where q's support misses part of p's."""
    register_kl(type_p, type_q)(lambda p, q: full_like(getattr(p, param), _INF))


_UNBOUNDED_TO_BOUNDED = (Beta, ContinuousBernoulli, Pareto, Uniform)
for _type_p, _param, _types_q in (
    (Beta, "concentration1", (Pareto,)),
    (ContinuousBernoulli, "probs", (Pareto,)),
    (Exponential, "rate", _UNBOUNDED_TO_BOUNDED),
    (Gamma, "concentration", _UNBOUNDED_TO_BOUNDED),
    (Gumbel, "loc", (*_UNBOUNDED_TO_BOUNDED, Exponential, Gamma)),
    (Laplace, "loc", (*_UNBOUNDED_TO_BOUNDED, Exponential, Gamma)),
    (Normal, "loc", (*_UNBOUNDED_TO_BOUNDED, Exponential, Gamma)),
    (Pareto, "scale", (Beta, ContinuousBernoulli, Uniform)),
    (Poisson, "rate", (Bernoulli, Binomial)),
):
    for _type_q in _types_q:
        _register_infinite(_type_p, _type_q, _param)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError(
            "KL between TransformedDistributions is implemented only for the same transforms "
            "and event shape"
        )
    return kl_divergence(p.base_dist, q.base_dist)
