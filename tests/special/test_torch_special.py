"""``tw.special`` against ``torch.special`` (and SciPy in float64): every function by its
PyTorch name, on a spread of values with the edges (0, poles, ±1, tails, inf, NaN), in
float64 and float32, integer inputs, broadcasting, gradients by finite differences and
against PyTorch's.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp
import tensorweaver as tw
import torch
from gradcheck import gradcheck, gradgradcheck
from tensor_reference import grads_like_torch, host, like_torch, uniform

inf, nan = np.inf, np.nan
EDGES = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.5, 1e-300, 1e-8, -1e-8, 3.0, 10.0])
EDGES = np.concatenate([EDGES, [-3.0, -6.0, -10.0, -30.0, -40.0, 27.0, 40.0, 1e10, inf, -inf, nan]])
VALUES = np.concatenate([EDGES, uniform((40,), -6, 6, seed=11)])
PROBABILITIES = np.concatenate(
    [[0.0, 1.0, 0.5, 1e-300, 1e-20, 1e-5, 1 - 1e-12, 0.999, -0.5, 1.5, nan], uniform((30,), 0, 1)]
)
#: Inputs of each unary function: its whole line, or [0, 1] for the inverse CDFs.
UNARY = {
    name: VALUES
    for name in (
        "erf erfc erfcx gammaln digamma psi i0 i0e i1 i1e log_ndtr ndtr sinc entr expit expm1 "
        "exp2 log1p round"
    ).split()
}
UNARY.update(erfinv=2 * PROBABILITIES - 1, ndtri=PROBABILITIES, logit=PROBABILITIES)
#: Where PyTorch's float64 kernel is less accurate than ours on VALUES (checked against
#: mpmath), or ours than PyTorch's: its ndtr in the lower tail (1 + erf cancels: only an
#: absolute 1e-16 there; SciPy checks ours), its digamma next to a pole, gammaln near its
#: roots (absolute), and expit in the far tails, which is the core's sigmoid (absolute 3e-17).
TOLERANCE = {
    "ndtr": (1e-12, 1e-16),
    "expit": (1e-12, 3e-17),
    "digamma": (1e-10, 0.0),
    "psi": (1e-10, 0.0),
    "gammaln": (1e-12, 1e-15),
}
#: SciPy's spellings where they differ.
SCIPY = {"i0": sp.i0, "i0e": sp.i0e, "i1": sp.i1, "i1e": sp.i1e, "round": np.round}


def _same(ours: tw.Tensor, theirs: torch.Tensor, rtol: float, atol: float) -> None:
    assert str(ours.dtype).rsplit(".", 1)[-1] == str(theirs.dtype).rsplit(".", 1)[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(
        host(ours).astype(np.float64),
        theirs.double().numpy(),
        rtol=rtol,
        atol=atol,
        equal_nan=True,
    )


def test_every_name_is_torch_specials() -> None:
    assert set(tw.special.__all__) <= set(dir(torch.special))
    assert {"erf", "erfcx", "ndtri", "xlog1py", "zeta", "multigammaln", "log_softmax"} <= set(
        tw.special.__all__
    )


@pytest.mark.parametrize("name", UNARY)
def test_float64_like_torch(backend: str, name: str) -> None:
    x = UNARY[name]
    ours = getattr(tw.special, name)(tw.tensor(x))
    theirs = getattr(torch.special, name)(torch.tensor(x))
    _same(ours, theirs, *TOLERANCE.get(name, (1e-12, 0.0)))


@pytest.mark.parametrize("name", UNARY)
def test_float32_like_torch_in_float64(backend: str, name: str) -> None:
    """float32 results agree with PyTorch's float64 values, rounded to float32, to float32's
    precision (absolute 1e-6: float32 kernels such as PyTorch's digamma near its root, and
    sin(pi * x) in sinc, lose that much)."""
    x = UNARY[name].astype(np.float32)
    ours = getattr(tw.special, name)(tw.tensor(x))
    assert ours.dtype is tw.float32
    reference = getattr(torch.special, name)(torch.tensor(x, dtype=torch.float64)).float()
    _same(ours, reference, 4e-6, 1e-6)


@pytest.mark.parametrize(
    "name", ["erfcx", "i0e", "i1", "i1e", "ndtr", "log_ndtr", "ndtri", "erfinv"]
)
def test_float64_against_scipy(backend: str, name: str) -> None:
    x = UNARY[name]
    x = x[np.isfinite(x)]
    ours = host(getattr(tw.special, name)(tw.tensor(x)))
    with np.errstate(all="ignore"):
        expected = SCIPY.get(name, getattr(sp, name))(x)
    # SciPy's log_ndtr is better than PyTorch's (and ours) for large x: 1 - erfc rounds there;
    # ndtr, as PyTorch's, takes erfc of -x / sqrt(2), whose rounding grows as x**2 in the tail.
    rtol = {"log_ndtr": 1e-9, "ndtr": 1e-12}.get(name, 2e-14)
    np.testing.assert_allclose(ours, expected, rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize("name", ["erfcx", "i1e", "ndtr", "entr", "expit", "sinc", "logit"])
def test_integer_inputs_give_the_default_float(backend: str, name: str, dtype: str) -> None:
    x = np.array([0, 1, 2]) if dtype == "int64" else np.array([True, False])
    like_torch(lambda m, t: getattr(m.special, name)(t), x, dtype=dtype)


def test_binary_functions_broadcast_like_torch(backend: str) -> None:
    a, b = uniform((3, 1), 0, 4, seed=12), uniform((5,), -0.9, 4, seed=13)
    like_torch(lambda m, x, y: m.special.xlogy(x, m.abs(y)), a, b)
    like_torch(lambda m, x, y: m.special.xlog1py(x, y), a, b)
    like_torch(lambda m, x, y: m.special.zeta(x + 1.5, m.abs(y)), a, b)
    like_torch(lambda m, x, y: m.special.zeta(x + 1.5, y), a, b, dtype="float32")
    like_torch(lambda m, x: m.special.zeta(x + 2, 3), a)
    edges = np.array([0.0, 0.0, 0.0, 1.0, 2.0, nan])
    others = np.array([0.0, -1.0, nan, -1.0, inf, 1.0])
    like_torch(lambda m, x, y: m.special.xlog1py(x, y), edges, others)
    like_torch(lambda m, x, y: m.special.xlogy(x, y), edges, others)


def test_zeta_edges_like_torch(backend: str) -> None:
    # (not x = inf: PyTorch's zeta(inf, 2) is NaN, ours the limit 0)
    x = np.array([2.0, 1.0, 0.5, 3.0, 3.0, 2.0, 2.0, 4.0, 1.5, 2.0])
    q = np.array([-1.5, 1.0, 1.0, 0.0, -2.0, 1e-5, 1e5, -0.25, 0.5, inf])
    like_torch(lambda m, a, b: m.special.zeta(a, b), x, q)
    np.testing.assert_allclose(host(tw.special.zeta(tw.tensor(x[:3]), 2.0)), sp.zeta(x[:3], 2.0))


def test_polygamma_and_multigammaln_like_torch(backend: str) -> None:
    x = uniform((2, 3), 0.3, 5, seed=14)
    for n in (0, 2, 4):
        like_torch(lambda m, t, n=n: m.special.polygamma(n, t), x)
    like_torch(lambda m, t: m.special.multigammaln(t, 3), x + 1)
    like_torch(lambda m, t: m.special.multigammaln(t, 1), x)
    # PyTorch 2.13 has no domain check (this raised): lgamma's poles give inf
    like_torch(lambda m, t: m.special.multigammaln(t, 3), np.array([-0.3, 0.5, 1.0, 0.6]))
    like_torch(lambda m, t: m.mvlgamma(t, 2), np.array([0.2, -1.7, 0.5, 3.0]))


def test_reductions_and_softmax_like_torch(backend: str) -> None:
    x = uniform((3, 4), -5, 5, seed=15)
    like_torch(lambda m, t: m.special.logsumexp(t, 1), x)
    like_torch(lambda m, t: m.special.logsumexp(t, (0, 1), keepdim=True), x)
    like_torch(lambda m, t: m.special.softmax(t, 0), x)
    like_torch(lambda m, t: m.special.log_softmax(t, -1, dtype=m.float32), x)
    like_torch(lambda m, t: m.special.round(t, decimals=1), x)


def test_0d_and_empty_like_torch(backend: str) -> None:
    for name in ("erfcx", "ndtri", "log_ndtr", "i1e", "entr"):
        like_torch(lambda m, t, name=name: getattr(m.special, name)(t), np.array(0.25))
        like_torch(lambda m, t, name=name: getattr(m.special, name)(t), np.zeros((2, 0)))


GRADIENTS = {
    "erfcx": (lambda x: tw.special.erfcx(x), (-2, 5)),
    "i0e": (lambda x: tw.special.i0e(x), (0.2, 4)),
    "i1": (lambda x: tw.special.i1(x), (-3, 3)),
    "i1e": (lambda x: tw.special.i1e(x), (0.2, 4)),
    "ndtr": (lambda x: tw.special.ndtr(x), (-3, 3)),
    "ndtri": (lambda x: tw.special.ndtri(x), (0.05, 0.95)),
    "log_ndtr": (lambda x: tw.special.log_ndtr(x), (-6, 3)),
    "entr": (lambda x: tw.special.entr(x), (0.1, 3)),
    "xlog1py": (lambda x: tw.special.xlog1py(x, x * 0.5), (0.1, 3)),
    "zeta": (lambda x: tw.special.zeta(3.0, x), (0.5, 4)),
    "multigammaln": (lambda x: tw.special.multigammaln(x, 2), (1, 4)),
}


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradients_by_finite_differences(backend: str, name: str) -> None:
    fn, (low, high) = GRADIENTS[name]
    x = uniform((2, 3), low, high, seed=16)
    gradcheck(fn, x)
    gradgradcheck(fn, x)


def test_gradients_like_torch(backend: str) -> None:
    x = np.array([-1.5, -0.2, 0.0, 0.7, 3.0])
    for name in ("erfcx", "i0e", "i1", "i1e", "log_ndtr", "ndtr", "sinc", "expit", "erfc"):
        grads_like_torch(lambda m, t, name=name: getattr(m.special, name)(t), x)
    grads_like_torch(lambda m, t: m.special.ndtri(t), np.array([0.01, 0.3, 0.5, 0.9]))
    grads_like_torch(lambda m, t: m.special.zeta(2.5, t), np.array([0.5, 1.0, 4.0]))
    with pytest.raises(NotImplementedError, match="zeta"):
        a = tw.tensor([2.5], requires_grad=True)
        tw.special.zeta(a, 1.0).backward()


@pytest.mark.filterwarnings("ignore::tensorweaver.ops.host_fallback.HostFallbackWarning")
@pytest.mark.cunumeric
def test_a_few_on_every_backend(backend: str) -> None:
    """The host fallback serves backends without these kernels (cuPyNumeric has none)."""
    x = np.array([0.1, 0.5, 2.0])
    like_torch(lambda m, t: m.special.i1e(t), x)
    like_torch(lambda m, t: m.special.ndtri(t / 3), x)
    like_torch(lambda m, t: m.special.gammaln(t), x, dtype="float32")
