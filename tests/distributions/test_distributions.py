"""Every distribution against ``torch.distributions`` with the same float64 parameters:
log_prob, entropy, moments, cdf/icdf, shapes, samples in the support, and the gradients of
log_prob with respect to the parameters; errors for bad arguments and values."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.distributions as D
import torch
import torch.distributions as td

RNG = np.random.default_rng(0)
B = (2, 3)  # a batch shape


def _pos(*shape: int) -> np.ndarray:
    return RNG.uniform(0.5, 2.5, shape)


def _real(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape)


def _prob(*shape: int) -> np.ndarray:
    return RNG.uniform(0.1, 0.9, shape)


def _simplex(*shape: int) -> np.ndarray:
    p = RNG.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


def _spd(n: int, *batch: int) -> np.ndarray:
    a = RNG.normal(size=(*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


# name -> (params, constructor of (module, params), values for log_prob, which extra methods)
CASES: dict[str, tuple[dict, Callable[[Any, dict], Any], np.ndarray, tuple[str, ...]]] = {
    "Normal": (
        {"loc": _real(*B), "scale": _pos(*B)},
        lambda m, p: m.Normal(p["loc"], p["scale"]),
        _real(4, *B),
        ("cdf", "icdf", "entropy"),
    ),
    "Laplace": (
        {"loc": _real(*B), "scale": _pos(*B)},
        lambda m, p: m.Laplace(p["loc"], p["scale"]),
        _real(4, *B),
        ("cdf", "icdf", "entropy"),
    ),
    "Uniform": (
        {"low": -_pos(*B), "high": _pos(*B)},
        lambda m, p: m.Uniform(p["low"], p["high"]),
        RNG.uniform(-0.4, 0.4, (4, *B)),
        ("cdf", "icdf", "entropy"),
    ),
    "Exponential": (
        {"rate": _pos(*B)},
        lambda m, p: m.Exponential(p["rate"]),
        _pos(4, *B),
        ("cdf", "icdf", "entropy"),
    ),
    "Gamma": (
        {"concentration": _pos(*B), "rate": _pos(*B)},
        lambda m, p: m.Gamma(p["concentration"], p["rate"]),
        _pos(4, *B),
        ("entropy",),
    ),
    "Chi2": ({"df": _pos(*B) * 2}, lambda m, p: m.Chi2(p["df"]), _pos(4, *B), ("entropy",)),
    "Beta": (
        {"concentration1": _pos(*B), "concentration0": _pos(*B)},
        lambda m, p: m.Beta(p["concentration1"], p["concentration0"]),
        _prob(4, *B),
        ("entropy",),
    ),
    "Dirichlet": (
        {"concentration": _pos(*B, 4)},
        lambda m, p: m.Dirichlet(p["concentration"]),
        _simplex(5, *B, 4),
        ("entropy",),
    ),
    "Bernoulli": (
        {"probs": _prob(*B)},
        lambda m, p: m.Bernoulli(probs=p["probs"]),
        RNG.integers(0, 2, (4, *B)).astype(float),
        ("entropy", "enumerate_support"),
    ),
    "Bernoulli_logits": (
        {"logits": _real(*B)},
        lambda m, p: m.Bernoulli(logits=p["logits"]),
        RNG.integers(0, 2, (4, *B)).astype(float),
        ("entropy",),
    ),
    "Categorical": (
        {"probs": _simplex(*B, 5)},
        lambda m, p: m.Categorical(probs=p["probs"]),
        RNG.integers(0, 5, (4, *B)),
        ("entropy", "enumerate_support"),
    ),
    "Categorical_logits": (
        {"logits": _real(*B, 5)},
        lambda m, p: m.Categorical(logits=p["logits"]),
        RNG.integers(0, 5, (4, *B)),
        ("entropy",),
    ),
    "OneHotCategorical": (
        {"logits": _real(*B, 5)},
        lambda m, p: m.OneHotCategorical(logits=p["logits"]),
        np.eye(5)[RNG.integers(0, 5, (4, *B))],
        ("entropy", "enumerate_support"),
    ),
    "Poisson": (
        {"rate": _pos(*B)},
        lambda m, p: m.Poisson(p["rate"]),
        RNG.integers(0, 6, (4, *B)).astype(float),
        (),
    ),
    "Binomial": (
        {"total_count": np.full(B, 7.0), "probs": _prob(*B)},
        lambda m, p: m.Binomial(p["total_count"], probs=p["probs"]),
        RNG.integers(0, 8, (4, *B)).astype(float),
        ("entropy",),
    ),
    "MultivariateNormal_cov": (
        {"loc": _real(2, 3), "covariance_matrix": _spd(3, 2)},
        lambda m, p: m.MultivariateNormal(p["loc"], covariance_matrix=p["covariance_matrix"]),
        _real(4, 2, 3),
        ("entropy",),
    ),
    "MultivariateNormal_precision": (
        {"loc": _real(3), "precision_matrix": _spd(3)},
        lambda m, p: m.MultivariateNormal(p["loc"], precision_matrix=p["precision_matrix"]),
        _real(4, 3),
        ("entropy",),
    ),
    "MultivariateNormal_tril": (
        {"loc": _real(2, 3), "scale_tril": np.linalg.cholesky(_spd(3, 2))},
        lambda m, p: m.MultivariateNormal(p["loc"], scale_tril=p["scale_tril"]),
        _real(4, 2, 3),
        ("entropy",),
    ),
    "LowRankMultivariateNormal": (
        {"loc": _real(2, 4), "cov_factor": _real(2, 4, 2), "cov_diag": _pos(2, 4)},
        lambda m, p: m.LowRankMultivariateNormal(p["loc"], p["cov_factor"], p["cov_diag"]),
        _real(3, 2, 4),
        ("entropy",),
    ),
    "Independent_Normal": (
        {"loc": _real(*B), "scale": _pos(*B)},
        lambda m, p: m.Independent(m.Normal(p["loc"], p["scale"]), 1),
        _real(4, *B),
        ("entropy",),
    ),
    "MixtureSameFamily": (
        {"logits": _real(2, 3), "loc": _real(2, 3), "scale": _pos(2, 3)},
        lambda m, p: m.MixtureSameFamily(
            m.Categorical(logits=p["logits"]), m.Normal(p["loc"], p["scale"])
        ),
        _real(4, 2),
        ("cdf",),
    ),
    "TransformedDistribution_lognormal": (
        {"loc": _real(*B), "scale": _pos(*B)},
        lambda m, p: m.TransformedDistribution(
            m.Normal(p["loc"], p["scale"]),
            [m.transforms.AffineTransform(0.5, 2.0), m.transforms.ExpTransform()],
        ),
        _pos(4, *B),
        ("cdf", "icdf"),
    ),
    "TransformedDistribution_sigmoid_tanh": (
        {"loc": _real(*B), "scale": _pos(*B)},
        lambda m, p: m.TransformedDistribution(
            m.Normal(p["loc"], p["scale"]), [m.transforms.SigmoidTransform()]
        ),
        _prob(4, *B),
        ("cdf",),
    ),
    "RelaxedOneHotCategorical": (
        {"temperature": np.array(0.7), "logits": _real(*B, 4)},
        lambda m, p: m.RelaxedOneHotCategorical(p["temperature"], logits=p["logits"]),
        _simplex(3, *B, 4),
        (),
    ),
}

NO_GRAD = {"total_count", "temperature"}  # parameters that are not differentiated


def _twins(name: str, requires_grad: bool = False) -> tuple:
    params, build, _, _ = CASES[name]
    ours = {
        k: tw.tensor(v, requires_grad=requires_grad and k not in NO_GRAD) for k, v in params.items()
    }
    theirs = {
        k: torch.tensor(v, requires_grad=requires_grad and k not in NO_GRAD)
        for k, v in params.items()
    }
    mod = D
    return build(mod, ours), build(td, theirs), ours, theirs


def _close(ours: Any, theirs: torch.Tensor, rtol: float = 1e-9) -> None:
    np.testing.assert_allclose(
        np.asarray(ours.detach(), dtype=np.float64), theirs.detach().numpy(), rtol=rtol, atol=1e-11
    )


def _value(name: str, like: Any) -> tuple:
    value = CASES[name][2]
    dtype_ours = tw.int64 if value.dtype.kind == "i" else tw.float64
    dtype_theirs = torch.int64 if value.dtype.kind == "i" else torch.float64
    return tw.tensor(value, dtype=dtype_ours), torch.tensor(value, dtype=dtype_theirs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_shapes_and_moments_like_torch(backend: str, name: str) -> None:
    ours, theirs, _, _ = _twins(name)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    v_ours, v_theirs = _value(name, ours)
    _close(ours.log_prob(v_ours), theirs.log_prob(v_theirs))
    for moment in ("mean", "variance"):
        try:
            expected = getattr(theirs, moment)
        except NotImplementedError:
            continue
        _close(getattr(ours, moment), expected)
    extras = CASES[name][3]
    if "entropy" in extras:
        _close(ours.entropy(), theirs.entropy())
    if "cdf" in extras:
        _close(ours.cdf(v_ours), theirs.cdf(v_theirs))
    if "icdf" in extras:
        q = np.linspace(0.05, 0.95, 4).reshape(4, 1, 1) * np.ones((4, *B))
        _close(ours.icdf(tw.tensor(q)), theirs.icdf(torch.tensor(q)))
    if "enumerate_support" in extras:
        _close(ours.enumerate_support(), theirs.enumerate_support())
        _close(ours.enumerate_support(False), theirs.enumerate_support(False))
    assert repr(ours).replace("tensorweaver.Size", "torch.Size") == repr(theirs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_gradients_like_torch(backend: str, name: str) -> None:
    ours, theirs, p_ours, p_theirs = _twins(name, requires_grad=True)
    v_ours, v_theirs = _value(name, ours)
    ours.log_prob(v_ours).sum().backward()
    theirs.log_prob(v_theirs).sum().backward()
    for k in p_ours:
        if k in NO_GRAD:
            continue
        assert p_ours[k].grad is not None, k
        _close(p_ours[k].grad, p_theirs[k].grad, rtol=1e-8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_samples_have_the_shape_and_lie_in_the_support(backend: str, name: str) -> None:
    ours, theirs, _, _ = _twins(name)
    draw = ours.sample((5,))
    assert tuple(draw.shape) == tuple(theirs.sample((5,)).shape)
    assert draw.device == tw.get_default_device()
    assert bool(ours.support.check(draw).all())
    if ours.has_rsample:
        assert tuple(ours.rsample((2,)).shape) == tuple(theirs.rsample((2,)).shape)


def test_samples_repeat_under_manual_seed(backend: str) -> None:
    for build in (
        lambda: D.Normal(tw.zeros(3), 1.0).sample((4,)),
        lambda: D.Gamma(tw.ones(3), 1.0).sample((4,)),
        lambda: D.Categorical(logits=tw.zeros(3, 4)).sample((4,)),
        lambda: D.Poisson(tw.ones(3)).sample((4,)),
    ):
        tw.manual_seed(7)
        first = build()
        tw.manual_seed(7)
        assert tw.equal(first, build())


# Moments of many draws against the distribution's own (6 standard errors: a correct sampler
# fails this about once in 10^9 runs; a wrong one fails it every time).
SAMPLED = {
    "Normal": lambda: D.Normal(tw.tensor([0.5, -1.0]), tw.tensor([1.0, 3.0])),
    "Laplace": lambda: D.Laplace(tw.tensor([0.5, -1.0]), tw.tensor([1.0, 3.0])),
    "Gamma": lambda: D.Gamma(tw.tensor([0.5, 3.0]), tw.tensor([2.0, 0.5])),
    "Beta": lambda: D.Beta(tw.tensor([0.5, 3.0]), tw.tensor([2.0, 0.5])),
    "Poisson": lambda: D.Poisson(tw.tensor([0.5, 30.0])),
    "Binomial": lambda: D.Binomial(tw.tensor([10.0, 3.0]), tw.tensor([0.3, 0.9])),
    "Exponential": lambda: D.Exponential(tw.tensor([0.5, 3.0])),
    "Bernoulli": lambda: D.Bernoulli(tw.tensor([0.2, 0.7])),
    "Uniform": lambda: D.Uniform(tw.tensor([0.0, -2.0]), tw.tensor([1.0, 5.0])),
    "LowRankMVN": lambda: D.LowRankMultivariateNormal(
        tw.tensor([0.5, -1.0]), tw.tensor([[1.0], [0.5]]), tw.tensor([0.3, 0.2])
    ),
}


@pytest.mark.parametrize("name", sorted(SAMPLED))
def test_sample_moments_match_the_distribution(backend: str, name: str) -> None:
    dist = SAMPLED[name]()
    n = 40000
    draws = np.asarray(dist.sample((n,)), dtype=np.float64)
    mean, var = np.asarray(dist.mean), np.asarray(dist.variance)
    np.testing.assert_array_less(np.abs(draws.mean(0) - mean), 6 * np.sqrt(var / n))


def test_categorical_frequencies_match_probs(backend: str) -> None:
    probs = np.array([0.1, 0.2, 0.7])
    n = 30000
    draws = np.asarray(D.Categorical(probs=tw.tensor(probs)).sample((n,)))
    freq = np.bincount(draws, minlength=3) / n
    np.testing.assert_array_less(np.abs(freq - probs), 6 * np.sqrt(probs * (1 - probs) / n))


def test_rsample_is_differentiable_with_reparameterized_gradients(backend: str) -> None:
    """x = loc + scale * eps: d/dloc mean(x) is exactly 1, and d/dscale mean((x - loc)^2) =
    2 scale mean(eps^2), about 2 scale."""
    loc = tw.tensor(0.3, requires_grad=True)
    scale = tw.tensor(1.5, requires_grad=True)
    dist = D.Normal(loc, scale)
    dist.rsample((20000,)).mean().backward()
    assert abs(loc.grad.item() - 1.0) < 1e-12
    x = dist.rsample((20000,))
    ((x - loc) ** 2).mean().backward()
    assert abs(scale.grad.item() - 3.0) < 0.15


def test_gamma_rsample_gradient_follows_the_quantile() -> None:
    """dx/da of a Gamma(a, 1) draw is the derivative of its quantile at fixed probability,
    checked against SciPy's inverse incomplete gamma by central differences."""
    special = pytest.importorskip("scipy.special")
    from tensorweaver.distributions.gamma_draws import standard_gamma_grad

    a = np.array([0.3, 0.9, 1.0, 2.5, 7.0, 40.0, 300.0])
    u = np.array([0.05, 0.3, 0.5, 0.7, 0.9, 0.2, 0.6])
    x = special.gammaincinv(a, u)
    h = 1e-6 * a
    expected = (special.gammaincinv(a + h, u) - special.gammaincinv(a - h, u)) / (2 * h)
    np.testing.assert_allclose(standard_gamma_grad(x, a), expected, rtol=1e-6)


def test_gamma_rsample_gradient_reaches_the_parameters(backend: str) -> None:
    """E[x] = a / b for Gamma(a, b): the mean of the reparameterized gradient of the draws
    with respect to a is 1 / b."""
    a = tw.tensor(2.0, requires_grad=True)
    D.Gamma(a, 4.0).rsample((20000,)).mean().backward()
    assert abs(a.grad.item() - 0.25) < 0.01


KL_PAIRS = [
    ("Normal", "Normal"),
    ("Laplace", "Laplace"),
    ("Exponential", "Exponential"),
    ("Gamma", "Gamma"),
    ("Beta", "Beta"),
    ("Dirichlet", "Dirichlet"),
    ("Bernoulli", "Bernoulli"),
    ("Categorical", "Categorical"),
    ("OneHotCategorical", "OneHotCategorical"),
    ("Poisson", "Poisson"),
    ("Binomial", "Binomial"),
    ("Uniform", "Uniform"),
    ("MultivariateNormal_cov", "MultivariateNormal_tril"),
    ("Independent_Normal", "Independent_Normal"),
]


@pytest.mark.parametrize(("p", "q"), KL_PAIRS)
def test_kl_divergence_like_torch(backend: str, p: str, q: str) -> None:
    p_ours, p_theirs, pp_ours, pp_theirs = _twins(p, requires_grad=True)
    params_q = {k: v * 1.1 if k not in ("total_count",) else v for k, v in CASES[q][0].items()}
    if q == "Uniform":
        params_q = {"low": CASES[q][0]["low"] * 1.5, "high": CASES[q][0]["high"] * 1.5}
    build = CASES[q][1]
    q_ours = build(D, {k: tw.tensor(v) for k, v in params_q.items()})
    q_theirs = build(td, {k: torch.tensor(v) for k, v in params_q.items()})
    kl_ours = D.kl_divergence(p_ours, q_ours)
    kl_theirs = td.kl_divergence(p_theirs, q_theirs)
    _close(kl_ours, kl_theirs, rtol=1e-8)
    kl_ours.sum().backward()
    kl_theirs.sum().backward()
    for k in pp_ours:
        if k not in NO_GRAD:
            _close(pp_ours[k].grad, pp_theirs[k].grad, rtol=1e-7)


def test_kl_of_an_unregistered_pair_raises_like_torch() -> None:
    with pytest.raises(NotImplementedError):
        td.kl_divergence(td.Normal(0.0, 1.0), td.Poisson(1.0))
    with pytest.raises(NotImplementedError, match="Normal.*Poisson"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Poisson(1.0))


def test_register_kl_uses_the_most_specific_registration() -> None:
    class Wide(D.Normal):
        pass

    @D.register_kl(Wide, D.Normal)
    def _kl(p: Any, q: Any) -> Any:
        return tw.tensor(-1.0)

    assert D.kl_divergence(Wide(0.0, 1.0), D.Normal(0.0, 1.0)).item() == -1.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), Wide(0.0, 1.0)).item() == 0.0


BAD = [
    (lambda m: m.Normal(0.0, -1.0), ValueError),
    (
        lambda m: m.Normal(m_tensor(m, [0.0, 1.0]), 1.0).log_prob(m_tensor(m, [1.0, 2.0, 3.0])),
        ValueError,
    ),
    (lambda m: m.Bernoulli(0.3).log_prob(m_tensor(m, 0.5)), ValueError),
    (lambda m: m.Bernoulli(probs=0.3, logits=0.1), ValueError),
    (lambda m: m.Categorical(probs=m_tensor(m, [0.2, -0.1])), ValueError),
    (lambda m: m.Uniform(1.0, 0.0), ValueError),
    (lambda m: m.Gamma(-1.0, 1.0), ValueError),
    (lambda m: m.MultivariateNormal(m_tensor(m, [0.0, 0.0])), ValueError),
    (lambda m: m.Poisson(1.0).rsample(), NotImplementedError),
    (lambda m: m.Categorical(logits=m_tensor(m, [0.0, 1.0])).log_prob(m_tensor(m, 3)), ValueError),
]


def m_tensor(m: Any, value: Any) -> Any:
    return (torch if m is td else tw).tensor(value)


@pytest.fixture
def torch_validates() -> Any:
    """PyTorch's argument validation on: torch.compile's first use (tw.compile on torch does
    it, in another test of this process) turns it off process-wide."""
    before = td.Distribution._validate_args
    td.Distribution.set_default_validate_args(True)
    yield
    td.Distribution.set_default_validate_args(before)


@pytest.mark.parametrize("index", range(len(BAD)))
def test_bad_arguments_raise_like_torch(index: int, torch_validates: Any) -> None:
    build, kind = BAD[index]
    with pytest.raises(kind) as theirs:
        build(td)
    with pytest.raises(kind) as ours:
        build(D)
    assert type(ours.value) is type(theirs.value)


def test_validation_can_be_turned_off_like_torch() -> None:
    D.Distribution.set_default_validate_args(False)
    try:
        assert D.Normal(0.0, -1.0).scale.item() == -1.0
    finally:
        D.Distribution.set_default_validate_args(True)
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0


@pytest.mark.parametrize("name", ["Normal", "Categorical", "Gamma", "MultivariateNormal_tril"])
def test_expand_like_torch(backend: str, name: str) -> None:
    ours, theirs, _, _ = _twins(name)
    big = (5, *ours.batch_shape)
    e_ours, e_theirs = ours.expand(big), theirs.expand(big)
    assert tuple(e_ours.batch_shape) == tuple(e_theirs.batch_shape)
    v_ours, v_theirs = _value(name, ours)
    _close(e_ours.log_prob(v_ours[:1]), e_theirs.log_prob(v_theirs[:1]))


@pytest.mark.cunumeric
def test_a_policy_gradient_step_with_categorical(backend: str) -> None:
    """REINFORCE on a 3-armed bandit: the policy learns the best arm."""
    tw.manual_seed(0)
    logits = tw.zeros(3, requires_grad=True)
    reward = tw.tensor([0.1, 0.2, 1.0])
    opt = tw.optim.Adam([logits], lr=0.1)
    for _ in range(60):
        dist = D.Categorical(logits=logits)
        actions = dist.sample((32,))
        loss = -(dist.log_prob(actions) * reward[actions]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert D.Categorical(logits=logits).probs[2].item() > 0.8
