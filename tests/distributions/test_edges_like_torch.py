"""Against ``torch.distributions`` in float64 where the first comparisons did not look:
values on the edge of and outside the support (with and without ``validate_args``), the
distribution named in a bad argument's ValueError, Gamma/Chi2/InverseGamma cdf (through
``tw.igamma``) and their gradients, cdf/icdf through transforms of either sign per element,
and KL pairs at the edges of their formulas."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.distributions as D
import torch
import torch.distributions as td


def _both(build: str, call: str) -> tuple:
    """``build`` then ``call`` (on ``d``) with our module and PyTorch's: each a float64
    array, or the exception class raised."""
    out = []
    for module, tensor in ((D, tw.tensor), (td, torch.tensor)):
        t = lambda v, tensor=tensor: tensor(np.asarray(v, dtype=np.float64))  # noqa: E731
        try:
            d = eval(build, {"M": module, "t": t, "math": math})
            value = eval(call, {"d": d, "t": t, "M": module, "math": math})
            out.append(np.asarray(value.detach() if hasattr(value, "detach") else value))
        except Exception as error:  # noqa: BLE001  (the class is what is compared)
            out.append(type(error))
    return tuple(out)


def _same(ours: Any, theirs: Any, rtol: float = 1e-10) -> None:
    if isinstance(theirs, type) or isinstance(ours, type):
        assert ours == theirs
    else:
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-14, equal_nan=True)


EDGES = [
    ("M.Kumaraswamy(t(1.5), t(0.7), validate_args={})", "d.{}(t([0.0, 1.0]))"),
    ("M.Uniform(t(0.0), t(2.0), validate_args={})", "d.{}(t([0.0, 2.0]))"),
    ("M.RelaxedBernoulli(t(0.7), t(0.3), validate_args={})", "d.{}(t([0.0, 1.0]))"),
    ("M.Gamma(t([2.5, 0.5]), t(1.5), validate_args={})", "d.{}(t([0.0, math.inf]))"),
    ("M.Gamma(t(2.5), t(1.5), validate_args={})", "d.{}(t([-1.0, math.nan]))"),
    ("M.Chi2(t([3.0, 0.5]), validate_args={})", "d.{}(t([0.0, math.inf]))"),
    ("M.InverseGamma(t([2.5, 0.5]), t(1.5), validate_args={})", "d.{}(t([0.0, math.inf]))"),
    ("M.InverseGamma(t(2.5), t(1.5), validate_args={})", "d.{}(t(-1.0))"),
    ("M.HalfNormal(t(2.0), validate_args={})", "d.{}(t([-1.0, 0.0, math.inf]))"),
]


@pytest.mark.parametrize("validate", [True, False])
@pytest.mark.parametrize("method", ["log_prob", "cdf"])
@pytest.mark.parametrize(("build", "call"), EDGES)
def test_support_edges_like_torch(build: str, call: str, method: str, validate: bool) -> None:
    ours, theirs = _both(build.format(validate), call.format(method))
    _same(ours, theirs)


@pytest.mark.parametrize(
    "build",
    ["M.HalfNormal(t(-1.0))", "M.HalfCauchy(t([1.0, -1.0]))", "M.Chi2(t(-1.0))"],
)
def test_bad_argument_names_the_distribution(build: str) -> None:
    messages = []
    for module, tensor in ((D, tw.tensor), (td, torch.tensor)):
        with pytest.raises(ValueError) as error:
            eval(build, {"M": module, "t": lambda v, f=tensor: f(np.asarray(v))})
        messages.append(str(error.value).split(" to satisfy")[0])
    name = build[2:].split("(")[0]
    assert f"of distribution {name}(" in messages[0]
    assert messages[0].split(" of distribution")[0] == messages[1].split(" of distribution")[0]


def test_gamma_family_cdf_like_torch() -> None:
    a = np.array([0.05, 0.5, 1.0, 2.5, 10.0, 100.0, 1000.0])[:, None]
    x = np.array([1e-3, 0.4, 1.0, 3.0, 9.0, 120.0, 950.0])
    for build in ("M.Gamma(t(a), t(1.7))", "M.Chi2(t(a))", "M.InverseGamma(t(a), t(1.7))"):
        ours, theirs = _both(build.replace("a)", f"{a.tolist()})"), f"d.cdf(t({x.tolist()}))")
        _same(ours, theirs, rtol=1e-9)


@pytest.mark.parametrize("name", ["Gamma", "InverseGamma"])
def test_gamma_family_cdf_gradients(name: str) -> None:
    """d/dvalue and d/drate against PyTorch; d/dconcentration raises as in PyTorch."""
    grads = []
    for module, tensor in ((D, tw.tensor), (td, torch.tensor)):
        x = tensor(np.array([0.5, 2.0]), requires_grad=True)
        rate = tensor(np.array([1.3]), requires_grad=True)
        getattr(module, name)(tensor(np.array([2.5, 0.7])), rate).cdf(x).sum().backward()
        grads.append(np.concatenate([np.asarray(x.grad), np.asarray(rate.grad)]))
        concentration = tensor(np.array([2.5]), requires_grad=True)
        out = getattr(module, name)(concentration, tensor(np.array([1.0]))).cdf(x.detach())
        with pytest.raises(NotImplementedError, match="igamma"):
            out.sum().backward()
    _same(*grads, rtol=1e-8)


def test_gamma_cdf_gradient_by_finite_differences() -> None:
    x = tw.tensor(np.array([0.3, 1.7, 6.0]), requires_grad=True)
    a, rate = tw.tensor(np.array([0.6, 2.5, 4.0])), tw.tensor(np.array([1.3, 0.4, 2.0]))
    D.Gamma(a, rate).cdf(x).sum().backward()
    h = 1e-6
    up = np.asarray(D.Gamma(a, rate).cdf(x.detach() + h))
    down = np.asarray(D.Gamma(a, rate).cdf(x.detach() - h))
    np.testing.assert_allclose(np.asarray(x.grad), (up - down) / (2 * h), rtol=1e-6)


@pytest.mark.parametrize("method", ["cdf", "icdf"])
def test_transformed_cdf_with_a_sign_per_element(method: str) -> None:
    affine = "M.transforms.AffineTransform(t(0.5), t([1.0, -2.0]))"
    build = f"M.TransformedDistribution(M.Normal(t(0.0), t(1.0)), {affine})"
    ours, theirs = _both(build, f"d.{method}(t([0.3, 0.3]))")
    _same(ours, theirs)


KL = [
    ("M.Binomial(6, t([0.3, 0.6]))", "M.Binomial(5, t([0.3, 0.5]))"),
    ("M.Binomial(5, t([0.3, 0.6]))", "M.Binomial(6, t([0.3, 0.5]))"),
    ("M.Binomial(5, t([0.3, 0.6]))", "M.Binomial(5, t([0.0, 0.5]))"),
    ("M.Uniform(t([0.0, 0.2]), t([1.0, 0.5]))", "M.Beta(t([1.5, 2.0]), t([0.7, 3.0]))"),
    ("M.Uniform(t([0.0, 0.2]), t([1.0, 0.5]))", "M.Gamma(t([1.5, 2.0]), t([0.7, 3.0]))"),
    ("M.Uniform(t([0.0, 0.2]), t([1.0, 0.5]))", "M.Chi2(t([1.5, 3.0]))"),
]


@pytest.mark.parametrize(("p", "q"), KL)
def test_kl_edges_like_torch(p: str, q: str) -> None:
    ours, theirs = _both(f"({p}, {q})", "M.kl_divergence(*d)")
    _same(ours, theirs)


def test_transformed_support_covers_the_whole_event() -> None:
    base = "M.Independent(M.Normal(t([0.0, 0.0]), t([1.0, 1.0])), 1)"
    build = f"M.TransformedDistribution({base}, M.transforms.ExpTransform())"
    for call in ("t(d.support.event_dim)", "d.support.check(t([[1.0, -2.0], [1.0, 1.0]]))"):
        ours, theirs = _both(build, call)
        np.testing.assert_array_equal(ours, theirs)


FAMILIES = [
    "M.Bernoulli(t([0.3, 0.6]))", "M.Gamma(t([0.3, 2.6]), t([1.0, 2.0]))", "M.Chi2(t([0.3, 2.6]))",
    "M.Exponential(t([0.3, 2.6]))", "M.Normal(t([0.3, 2.6]), t([1.0, 2.0]))",
    "M.Poisson(t([0.3, 2.6]))", "M.Beta(t([0.3, 2.6]), t([1.0, 2.0]))",
    "M.Dirichlet(t([[0.3, 2.6], [1.0, 2.0]]))", "M.ContinuousBernoulli(t([0.3, 0.6]))",
]  # fmt: skip


@pytest.mark.parametrize("build", FAMILIES)
def test_exponential_families_like_torch(build: str) -> None:
    """The same members of ExponentialFamily, with its Bregman entropy where PyTorch has one."""
    ours, theirs = _both(build, "t(float(isinstance(d, M.ExponentialFamily)))")
    _same(ours, theirs)
    ours, theirs = _both(build, "d._log_normalizer(*d._natural_params)")
    _same(ours, theirs)
    ours, theirs = _both(build, "M.ExponentialFamily.entropy(d)")
    _same(ours, theirs, rtol=1e-9)
