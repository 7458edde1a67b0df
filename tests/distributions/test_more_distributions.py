"""The distributions added after the first set (StudentT to Wishart) against
``torch.distributions`` with the same float64 parameters, batched and broadcast: log_prob,
entropy, moments, cdf/icdf, shapes, support, gradients of log_prob, expand, and argument
errors of PyTorch's classes. Their draws: test_more_sampling.py; KL: test_more_kl.py."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.distributions as D
import torch
import torch.distributions as td

RNG = np.random.default_rng(1)
B = (2, 3)


def _pos(*shape: int, low: float = 0.5, high: float = 2.5) -> np.ndarray:
    return RNG.uniform(low, high, shape)


def _real(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape)


def _prob(*shape: int) -> np.ndarray:
    return RNG.uniform(0.1, 0.9, shape)


def _spd(n: int, *batch: int) -> np.ndarray:
    a = RNG.normal(size=(*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _corr_cholesky(n: int, *batch: int) -> np.ndarray:
    lower = np.tril(RNG.normal(size=(*batch, n, n)), -1) + np.eye(n) * RNG.uniform(0.3, 1, n)
    return lower / np.linalg.norm(lower, axis=-1, keepdims=True)


def _counts(n: int, k: int, *batch: int) -> np.ndarray:
    draws = RNG.integers(0, k, (*batch, n))
    return (draws[..., None] == np.arange(k)).sum(-2).astype(float)


# name -> (parameters, constructor of (module, parameters), values for log_prob, methods
# compared beyond log_prob/mean/variance/mode). Parameters broadcast: (3,) against (2, 3).
CASES: dict[str, tuple[dict, Callable[[Any, dict], Any], np.ndarray, tuple[str, ...]]] = {
    "StudentT": (
        {"df": np.array([0.7, 1.5, 4.5]), "loc": _real(*B), "scale": _pos(*B)},
        lambda m, p: m.StudentT(p["df"], p["loc"], p["scale"]),
        _real(4, *B) * 3,
        ("entropy",),
    ),
    "Cauchy": (
        {"loc": _real(3), "scale": _pos(*B)},
        lambda m, p: m.Cauchy(p["loc"], p["scale"]),
        _real(4, *B) * 3,
        ("entropy", "cdf", "icdf"),
    ),
    "HalfNormal": (
        {"scale": _pos(*B)},
        lambda m, p: m.HalfNormal(p["scale"]),
        _pos(4, *B, low=0.01, high=4.0),
        ("entropy", "cdf", "icdf"),
    ),
    "HalfCauchy": (
        {"scale": _pos(*B)},
        lambda m, p: m.HalfCauchy(p["scale"]),
        _pos(4, *B, low=0.01, high=4.0),
        ("entropy", "cdf", "icdf"),
    ),
    "LogNormal": (
        {"loc": _real(*B), "scale": _pos(3)},
        lambda m, p: m.LogNormal(p["loc"], p["scale"]),
        _pos(4, *B, low=0.05, high=5.0),
        ("entropy", "cdf", "icdf"),
    ),
    "Gumbel": (
        {"loc": _real(*B), "scale": _pos(*B)},
        lambda m, p: m.Gumbel(p["loc"], p["scale"]),
        _real(4, *B),
        ("entropy", "cdf", "icdf"),
    ),
    "Geometric": (
        {"probs": _prob(*B)},
        lambda m, p: m.Geometric(probs=p["probs"]),
        RNG.integers(0, 6, (4, *B)).astype(float),
        ("entropy",),
    ),
    "Geometric_logits": (
        {"logits": _real(*B)},
        lambda m, p: m.Geometric(logits=p["logits"]),
        RNG.integers(0, 6, (4, *B)).astype(float),
        ("entropy",),
    ),
    "NegativeBinomial": (
        {"total_count": np.array([0.5, 3.0, 7.5]), "probs": _prob(*B)},
        lambda m, p: m.NegativeBinomial(p["total_count"], probs=p["probs"]),
        RNG.integers(0, 9, (4, *B)).astype(float),
        (),
    ),
    "NegativeBinomial_logits": (
        {"total_count": np.full(B, 4.0), "logits": _real(*B)},
        lambda m, p: m.NegativeBinomial(p["total_count"], logits=p["logits"]),
        RNG.integers(0, 9, (4, *B)).astype(float),
        (),
    ),
    "Multinomial": (
        {"probs": _prob(*B, 4)},
        lambda m, p: m.Multinomial(5, probs=p["probs"]),
        _counts(5, 4, 4, *B),
        ("entropy",),
    ),
    "Multinomial_logits": (
        {"logits": _real(2, 4)},
        lambda m, p: m.Multinomial(3, logits=p["logits"]),
        _counts(3, 4, 5, 2),
        ("entropy",),
    ),
    "RelaxedBernoulli": (
        {"temperature": np.array(0.6), "logits": _real(*B)},
        lambda m, p: m.RelaxedBernoulli(p["temperature"], logits=p["logits"]),
        _prob(4, *B),
        (),
    ),
    "RelaxedBernoulli_probs": (
        {"temperature": np.array([0.4, 1.0, 2.0]), "probs": _prob(*B)},
        lambda m, p: m.RelaxedBernoulli(p["temperature"], probs=p["probs"]),
        _prob(4, *B),
        (),
    ),
    "LogisticNormal": (
        {"loc": _real(2, 3), "scale": _pos(2, 3)},
        lambda m, p: m.LogisticNormal(p["loc"], p["scale"]),
        RNG.dirichlet(np.ones(4), (5, 2)),
        (),
    ),
    "Weibull": (
        {"scale": _pos(*B), "concentration": np.array([0.7, 1.0, 2.5])},
        lambda m, p: m.Weibull(p["scale"], p["concentration"]),
        _pos(4, *B, low=0.05, high=4.0),
        ("entropy", "cdf", "icdf"),
    ),
    "Pareto": (
        {"scale": _pos(*B, low=0.1, high=0.4), "alpha": np.array([0.8, 1.5, 3.0])},
        lambda m, p: m.Pareto(p["scale"], p["alpha"]),
        _pos(4, *B, low=0.5, high=6.0),
        ("entropy", "cdf", "icdf"),
    ),
    "FisherSnedecor": (
        {"df1": np.array([1.5, 3.0, 8.0]), "df2": np.array([[1.5, 3.0, 5.0], [6.0, 9.0, 2.5]])},
        lambda m, p: m.FisherSnedecor(p["df1"], p["df2"]),
        _pos(4, *B, low=0.05, high=4.0),
        (),
    ),
    "Kumaraswamy": (
        {"concentration1": _pos(*B), "concentration0": _pos(*B)},
        lambda m, p: m.Kumaraswamy(p["concentration1"], p["concentration0"]),
        _prob(4, *B),
        ("entropy", "cdf", "icdf"),
    ),
    "ContinuousBernoulli": (
        # 0.4995 and 0.5005 lie within the default lims, where the Taylor forms apply
        {"probs": np.array([[0.1, 0.4995, 0.8], [0.3, 0.5005, 0.97]])},
        lambda m, p: m.ContinuousBernoulli(probs=p["probs"]),
        _prob(4, *B),
        ("entropy", "cdf", "icdf"),
    ),
    "ContinuousBernoulli_logits": (
        {"logits": _real(*B) * 2},
        lambda m, p: m.ContinuousBernoulli(logits=p["logits"]),
        _prob(4, *B),
        ("entropy", "cdf", "icdf"),
    ),
    "VonMises": (
        {"loc": _real(*B), "concentration": np.array([0.3, 2.0, 9.0])},
        lambda m, p: m.VonMises(p["loc"], p["concentration"]),
        RNG.uniform(-np.pi, np.pi, (4, *B)),
        (),
    ),
    "InverseGamma": (
        {"concentration": np.array([0.8, 1.5, 3.5]), "rate": _pos(*B)},
        lambda m, p: m.InverseGamma(p["concentration"], p["rate"]),
        _pos(4, *B, low=0.05, high=4.0),
        ("entropy",),
    ),
    "GeneralizedPareto": (
        {"loc": _real(*B) * 0.1, "scale": _pos(*B), "concentration": np.array([-0.2, 0.0, 0.3])},
        lambda m, p: m.GeneralizedPareto(p["loc"], p["scale"], p["concentration"]),
        _pos(4, *B, low=0.2, high=1.5),
        ("entropy", "cdf", "icdf"),
    ),
    "Wishart": (
        {"df": np.array([3.5, 6.0]), "covariance_matrix": _spd(3, 2)},
        lambda m, p: m.Wishart(p["df"], covariance_matrix=p["covariance_matrix"]),
        _spd(3, 4, 2),
        ("entropy",),
    ),
    "Wishart_tril": (
        {"df": np.array(4.5), "scale_tril": np.linalg.cholesky(_spd(3, 2))},
        lambda m, p: m.Wishart(p["df"], scale_tril=p["scale_tril"]),
        _spd(3, 4, 2),
        ("entropy",),
    ),
    "Wishart_precision": (
        {"df": np.array([3.0, 7.0]), "precision_matrix": _spd(2)},
        lambda m, p: m.Wishart(p["df"], precision_matrix=p["precision_matrix"]),
        _spd(2, 4, 2),
        ("entropy",),
    ),
    "LKJCholesky": (
        {"concentration": np.array([0.5, 1.0, 3.0])},
        lambda m, p: m.LKJCholesky(4, p["concentration"]),
        _corr_cholesky(4, 5, 3),
        (),
    ),
    "OneHotCategoricalStraightThrough": (
        {"logits": _real(*B, 4)},
        lambda m, p: m.OneHotCategoricalStraightThrough(logits=p["logits"]),
        np.eye(4)[RNG.integers(0, 4, (4, *B))],
        ("entropy",),
    ),
}

NO_GRAD = {"total_count"}
# VonMises: PyTorch's log I0 is a polynomial approximation good to about 1e-7 (ours is
# the exact scaled Bessel function).
RTOL = {"VonMises": 1e-6}
# PyTorch 2.13's Kumaraswamy.mode takes log1p(-b), NaN for every b > 1; ours is the mode.
NO_MODE = {"Kumaraswamy"}


def _twins(name: str, requires_grad: bool = False) -> tuple:
    params, build, _, _ = CASES[name]
    ours = {
        k: tw.tensor(v, requires_grad=requires_grad and k not in NO_GRAD) for k, v in params.items()
    }
    theirs = {
        k: torch.tensor(v, requires_grad=requires_grad and k not in NO_GRAD)
        for k, v in params.items()
    }
    return build(D, ours), build(td, theirs), ours, theirs


def _close(ours: Any, theirs: torch.Tensor, rtol: float = 1e-9, atol: float = 1e-11) -> None:
    np.testing.assert_allclose(
        np.asarray(ours.detach(), dtype=np.float64), theirs.detach().numpy(), rtol=rtol, atol=atol
    )


def _values(name: str) -> tuple:
    value = CASES[name][2]
    return tw.tensor(value), torch.tensor(value)


@pytest.fixture(autouse=True)
def torch_float64() -> Any:
    """PyTorch in float64 by default too: its GeneralizedPareto compares the concentration
    with a tensor of the default dtype and refuses a float64 one otherwise."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_moments_and_methods_like_torch(backend: str, name: str) -> None:
    ours, theirs, _, _ = _twins(name)
    rtol = RTOL.get(name, 1e-9)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert ours.has_rsample == theirs.has_rsample
    v_ours, v_theirs = _values(name)
    _close(ours.log_prob(v_ours), theirs.log_prob(v_theirs), rtol)
    moments = ("mean", "variance", "stddev") + (() if name in NO_MODE else ("mode",))
    for moment in moments:
        try:
            expected = getattr(theirs, moment)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                getattr(ours, moment)
            continue
        _close(getattr(ours, moment), expected, rtol)
    extras = CASES[name][3]
    if "entropy" in extras:
        _close(ours.entropy(), theirs.entropy())
    if "cdf" in extras:
        _close(ours.cdf(v_ours), theirs.cdf(v_theirs))
    if "icdf" in extras:
        q = np.linspace(0.05, 0.95, 4).reshape(4, 1, 1) * np.ones((4, *B))
        _close(ours.icdf(tw.tensor(q)), theirs.icdf(torch.tensor(q)))
    assert repr(ours).replace("tensorweaver.Size", "torch.Size") == repr(theirs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_and_entropy_gradients_like_torch(backend: str, name: str) -> None:
    ours, theirs, p_ours, p_theirs = _twins(name, requires_grad=True)
    v_ours, v_theirs = _values(name)
    loss_ours, loss_theirs = ours.log_prob(v_ours).sum(), theirs.log_prob(v_theirs).sum()
    if "entropy" in CASES[name][3]:
        loss_ours = loss_ours + ours.entropy().sum()
        loss_theirs = loss_theirs + theirs.entropy().sum()
    loss_ours.backward()
    loss_theirs.backward()
    for k in p_ours:
        if k not in NO_GRAD:
            assert p_ours[k].grad is not None, k
            ours_grad, theirs_grad = p_ours[k].grad, p_theirs[k].grad
            if k == "scale_tril":
                # PyTorch's cholesky_solve also differentiates the upper triangle, which
                # it never reads; only the lower triangle is the parameter.
                ours_grad, theirs_grad = ours_grad.tril(), theirs_grad.tril()
            _close(ours_grad, theirs_grad, rtol=max(RTOL.get(name, 0), 1e-8))


# PyTorch 2.13's Wishart.rsample tests its draws for being in the support and calls those
# that are singular: it warns on every draw.
@pytest.mark.filterwarnings("ignore:Singular sample detected")
@pytest.mark.parametrize("name", sorted(CASES))
def test_samples_have_the_shape_and_lie_in_the_support(backend: str, name: str) -> None:
    ours, theirs, _, _ = _twins(name)
    draw = ours.sample((5,))
    assert tuple(draw.shape) == tuple(theirs.sample((5,)).shape)
    assert draw.device == tw.get_default_device()
    assert bool(ours.support.check(draw).all())
    if ours.has_rsample:
        assert tuple(ours.rsample((2,)).shape) == tuple(theirs.rsample((2,)).shape)


@pytest.mark.filterwarnings("ignore:Singular sample detected")
@pytest.mark.parametrize("name", sorted(CASES))
def test_expand_like_torch(backend: str, name: str) -> None:
    ours, theirs, _, _ = _twins(name)
    big = (5, *ours.batch_shape)
    e_ours, e_theirs = ours.expand(big), theirs.expand(big)
    assert type(e_ours).__name__ == type(e_theirs).__name__
    assert tuple(e_ours.batch_shape) == tuple(e_theirs.batch_shape)
    assert tuple(e_ours.event_shape) == tuple(e_theirs.event_shape)
    v_ours, v_theirs = _values(name)
    _close(e_ours.log_prob(v_ours[:1]), e_theirs.log_prob(v_theirs[:1]), RTOL.get(name, 1e-9))
    try:
        variance = e_theirs.variance
    except NotImplementedError:  # none in PyTorch either (LKJCholesky, the relaxed ones)
        variance = None
    if variance is not None:
        _close(e_ours.variance, variance, RTOL.get(name, 1e-9))
    assert tuple(e_ours.sample().shape) == tuple(e_theirs.sample().shape)
    if e_ours.has_rsample:
        assert tuple(e_ours.rsample((2,)).shape) == tuple(e_theirs.rsample((2,)).shape)


BAD = [
    lambda m: m.StudentT(-1.0),
    lambda m: m.Cauchy(0.0, -1.0),
    lambda m: m.HalfNormal(-1.0),
    lambda m: m.HalfNormal(1.0).log_prob(m_tensor(m, -1.0)),
    lambda m: m.HalfCauchy(0.0),
    lambda m: m.LogNormal(0.0, 1.0).log_prob(m_tensor(m, -1.0)),
    lambda m: m.Gumbel(0.0, -2.0),
    lambda m: m.Geometric(probs=m_tensor(m, [0.5, 0.0])),
    lambda m: m.Geometric(probs=0.3).log_prob(m_tensor(m, 1.5)),
    lambda m: m.Geometric(probs=0.3, logits=0.1),
    lambda m: m.NegativeBinomial(-1.0, probs=0.5),
    lambda m: m.NegativeBinomial(2.0, probs=1.0),
    lambda m: m.Multinomial(3, probs=m_tensor(m, [0.5, -0.5])),
    lambda m: m.Multinomial(2, probs=m_tensor(m, [0.5, 0.5])).log_prob(m_tensor(m, [-1.0, 1.0])),
    lambda m: m.RelaxedBernoulli(m_tensor(m, 1.0), probs=1.5),
    lambda m: m.LogisticNormal(m_tensor(m, [0.0, 0.0]), -1.0),
    lambda m: m.LogisticNormal(m_tensor(m, [0.0, 0.0]), 1.0).cdf(m_tensor(m, [0.2, 0.3, 0.5])),
    lambda m: m.Wishart(1.0, covariance_matrix=m_tensor(m, [[1.0, 0.0], [0.0, 1.0]])),
    lambda m: m.Wishart(3.0),
    lambda m: m.LKJCholesky(1),
    lambda m: m.LKJCholesky(3, -1.0),
    lambda m: m.Weibull(1.0, -1.0),
    lambda m: m.Pareto(1.0, 2.0).log_prob(m_tensor(m, 0.5)),
    lambda m: m.FisherSnedecor(1.0, 0.0),
    lambda m: m.Kumaraswamy(1.0, 1.0).log_prob(m_tensor(m, 1.5)),
    lambda m: m.ContinuousBernoulli(probs=1.5, validate_args=True),
    lambda m: m.VonMises(m_tensor(m, 0.0), m_tensor(m, -1.0)),
    lambda m: m.InverseGamma(1.0, -1.0),
    lambda m: m.GeneralizedPareto(0.0, -1.0, 0.1),
    lambda m: m.GeneralizedPareto(0.0, 1.0, -0.5).log_prob(m_tensor(m, 3.0)),
]


def m_tensor(m: Any, value: Any) -> Any:
    return (torch if m is td else tw).tensor(value)


@pytest.fixture
def torch_validates() -> Any:
    """PyTorch's argument validation on (torch.compile's first use turns it off)."""
    before = td.Distribution._validate_args
    td.Distribution.set_default_validate_args(True)
    yield
    td.Distribution.set_default_validate_args(before)


@pytest.mark.parametrize("index", range(len(BAD)))
def test_bad_arguments_raise_like_torch(index: int, torch_validates: Any) -> None:
    with pytest.raises(Exception) as theirs:
        BAD[index](td)
    with pytest.raises(Exception) as ours:
        BAD[index](D)
    assert type(ours.value) is type(theirs.value)


def test_multinomial_needs_one_total_count_like_torch() -> None:
    with pytest.raises(NotImplementedError):
        td.Multinomial(torch.tensor([2, 3]), probs=torch.tensor([0.5, 0.5]))
    with pytest.raises(NotImplementedError, match="inhomogeneous"):
        D.Multinomial(tw.tensor([2, 3]), probs=tw.tensor([0.5, 0.5]))


@pytest.mark.cunumeric
@pytest.mark.parametrize(
    "name", ["StudentT", "Gumbel", "Multinomial", "ContinuousBernoulli", "VonMises", "Weibull"]
)
def test_batched_log_prob_on_every_backend(backend: str, name: str) -> None:
    ours, theirs, _, _ = _twins(name)
    v_ours, v_theirs = _values(name)
    _close(ours.log_prob(v_ours), theirs.log_prob(v_theirs), RTOL.get(name, 1e-9))
    assert tuple(ours.sample((3,)).shape) == tuple(theirs.sample((3,)).shape)
