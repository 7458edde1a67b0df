"""PyTorch's less common top-level functions (``tw.isin``, ``unravel_index``, ``histogram``,
``trapezoid``, ``frexp``, ``nextafter``, ``vander``, ``pdist``, the window functions, ...)
and the Tensor methods with them (``put_``, ``apply_``, ``frexp``, ...), against torch in
float64 (values, dtypes, errors, gradients) on numpy and torch:cpu."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered

sys.path.insert(0, str(Path(__file__).parent.parent / "tensor"))
from gradcheck import gradcheck  # noqa: E402
from tensor_reference import grads_like_torch, like_torch, raises_like_torch  # noqa: E402


@pytest.fixture(params=FAST)
def backend(request: pytest.FixtureRequest):
    with entered(request.param) as spec:
        yield spec


rng = np.random.default_rng(0)
INTS = rng.integers(-3, 6, (3, 4))
VALUES = rng.standard_normal((4, 5))


def test_isin_like_torch(backend: str) -> None:
    tests = np.array([0, 2, 5, 7])
    like_torch(lambda m, a, b: m.isin(a, b), INTS, tests)
    like_torch(lambda m, a, b: m.isin(a, b, invert=True), INTS, tests)
    like_torch(lambda m, a, b: m.isin(a, b.double() / 2), INTS, tests)  # promoted compare
    like_torch(lambda m, a: m.isin(a, 2), INTS)
    like_torch(lambda m, b: m.isin(5, b), tests)
    like_torch(lambda m, a, b: m.isin(a, b[:0]), INTS, tests)
    nan = np.array([np.nan, 1.0, 2.0])
    like_torch(lambda m, a, b: m.isin(a, b), nan, nan)
    raises_like_torch(lambda m, a: m.isin(a.bool(), a), INTS, match=["isin"])
    raises_like_torch(lambda m: m.isin(1, 2), match=["isin"])


def test_unravel_index_like_torch(backend: str) -> None:
    flat = np.array([0, 4, 11, 12, -1])
    like_torch(lambda m, i: m.unravel_index(i, (3, 4)), flat)
    like_torch(lambda m, i: m.unravel_index(i, 6), flat)
    like_torch(lambda m, i: m.unravel_index(i[1], (2, 1, 3)), flat)
    like_torch(lambda m, i: m.unravel_index(i.int(), [4, 3]), flat)
    raises_like_torch(lambda m, i: m.unravel_index(i.float(), (3, 4)), flat, match=["integer"])
    raises_like_torch(lambda m, i: m.unravel_index(i, (3, -4)), flat, match=["negative"])


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.histogram(x, 5),
        lambda m, x: m.histogram(x, bins=4, range=(-1.0, 1.0), density=True),
        lambda m, x: m.histogram(x, m.tensor([-2.0, -0.5, 0.0, 3.0], dtype=m.float64)),
        lambda m, x: m.histogram(x, 3, weight=x.abs()),
        lambda m, x: m.histogram(m.ones(2, 3, dtype=m.float64), 3),
        lambda m, x: m.histogram(x[:0], 2),
        lambda m, x: m.histogramdd(x[:, :2], [3, 2], weight=x[:, 2].abs(), density=True),
        lambda m, x: m.histogramdd(x[:, :2], 3, range=[-1.0, 1.0, -2.0, 2.0]),
    ],
)
def test_histogram_like_torch(backend: str, call) -> None:
    ours, theirs = call(tw, tw.tensor(VALUES)), call(torch, torch.tensor(VALUES))
    np.testing.assert_allclose(np.asarray(ours.hist), theirs.hist.numpy(), rtol=1e-12)
    assert tuple(ours._fields) == ("hist", "bin_edges")
    edges = ours.bin_edges if isinstance(ours.bin_edges, tuple) else (ours.bin_edges,)
    want = theirs.bin_edges if isinstance(theirs.bin_edges, tuple) else (theirs.bin_edges,)
    for a, b in zip(edges, want, strict=True):
        np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-12, atol=1e-15)


def test_histogram_errors_like_torch(backend: str) -> None:
    raises_like_torch(lambda m, x: m.histogram(x, 0), VALUES, match=["bins"])
    raises_like_torch(lambda m, x: m.histogram(x, 3, range=(2.0, 1.0)), VALUES, match=["max"])
    raises_like_torch(lambda m, x: m.histogram(x.long(), 3), VALUES)
    # PyTorch's kernel has float and double only
    raises_like_torch(lambda m, x: m.histogram(x, 3), VALUES, dtype="float16")
    raises_like_torch(lambda m, x: m.histogramdd(x, 3), VALUES, dtype="float16")
    raises_like_torch(lambda m, x: m.histogram(x, 3, weight=x[0]), VALUES, match=["weight"])
    bad = np.array([np.nan, 1.0])
    raises_like_torch(lambda m, x: m.histogram(x, 3), bad, match=["finite"])
    raises_like_torch(lambda m, x: m.histogramdd(x[0], 3), VALUES, match=["2 dimensions"])


SAMPLES = rng.standard_normal((3, 5))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, y: m.trapezoid(y),
        lambda m, y: m.trapezoid(y, dx=0.3, dim=0),
        lambda m, y: m.trapezoid(y, m.tensor([0.0, 0.5, 2.0, 2.5, 4.0], dtype=m.float64)),
        lambda m, y: m.trapezoid(y, y.detach().cumsum(1) * 0 + m.arange(5.0, dtype=m.float64)),
        lambda m, y: m.trapz(y, m.tensor([0.0, 1.0, 3.0], dtype=m.float64), dim=0),
        lambda m, y: m.trapz(y, dx=2.0),
        lambda m, y: m.cumulative_trapezoid(y),
        lambda m, y: m.cumulative_trapezoid(y, dx=0.5, dim=0),
        lambda m, y: m.cumulative_trapezoid(
            y, m.tensor([0.0, 0.5, 2.0, 2.5, 4.0], dtype=m.float64)
        ),
    ],
)
def test_trapezoid_like_torch(backend: str, call) -> None:
    like_torch(call, SAMPLES)
    grads_like_torch(call, SAMPLES)


def test_trapezoid_dtypes_and_errors_like_torch(backend: str) -> None:
    like_torch(lambda m, y: m.trapezoid(y), INTS)
    like_torch(lambda m, y: m.trapezoid(y, dx=2), INTS)
    like_torch(lambda m, y: m.cumulative_trapezoid(y), INTS)
    like_torch(lambda m, y: m.trapezoid(y[:, :1]), SAMPLES)
    like_torch(lambda m, y: m.trapezoid(y[:, :0]), SAMPLES)
    raises_like_torch(lambda m, y: m.trapezoid(y, m.ones(4)), SAMPLES, match=["one `x`"])
    raises_like_torch(lambda m, y: m.trapezoid(y[0, 0]), SAMPLES, match=["dimension"])


SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, 5e-324, 2.0**-1022, 1.7e308, 1.0, 0.5, -3.0, 1e-5])


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_frexp_like_torch(backend: str, dtype: str) -> None:
    values = np.concatenate([SPECIAL, rng.standard_normal(20) * 10.0 ** rng.integers(-30, 30, 20)])
    with np.errstate(over="ignore", under="ignore"):
        like_torch(lambda m, x: tuple(m.frexp(x)), values, dtype=dtype)
        like_torch(lambda m, x: tuple(x.frexp()), values, dtype=dtype)
    assert tw.frexp(tw.ones(1))._fields == ("mantissa", "exponent")
    raises_like_torch(lambda m, x: m.frexp(x), INTS, match=["floating"])
    grads_like_torch(lambda m, x: m.frexp(x).mantissa, VALUES)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_nextafter_like_torch(backend: str, dtype: str) -> None:
    with np.errstate(over="ignore", under="ignore"):
        values = np.concatenate([SPECIAL, [np.nan], VALUES.ravel()]).astype(dtype)
        for target in (np.inf, -np.inf, 0.0, np.nan, 1.0):
            other = np.full_like(values, target)
            got = like_torch(lambda m, x, y: m.nextafter(x, y), values, other)
            np.testing.assert_array_equal(np.asarray(got), np.nextafter(values, other))
    like_torch(lambda m, x: m.nextafter(x.half(), m.zeros(1)), VALUES)  # promoted
    ours = tw.tensor(VALUES, dtype=tw.float32)
    assert ours.nextafter_(tw.zeros(1, dtype=tw.float64)) is ours
    raises_like_torch(lambda m, x: m.nextafter(x, 2.0), VALUES, match=["other"])


def test_nextafter_bfloat16_on_torch() -> None:
    with entered("torch:cpu"):
        like_torch(lambda m, x, y: m.nextafter(x, y), SPECIAL[:4], SPECIAL[4:8], dtype="bfloat16")


def test_mvlgamma_like_torch(backend: str) -> None:
    x = rng.uniform(1.6, 4.0, (3, 4))
    like_torch(lambda m, a: m.mvlgamma(a, 3), x)
    like_torch(lambda m, a: a.mvlgamma(p=2), x)
    like_torch(lambda m, a: a.clone().mvlgamma_(2), x)
    grads_like_torch(lambda m, a: m.mvlgamma(a, 3), x)
    raises_like_torch(lambda m, a: m.mvlgamma(a, 0), x, match=["p"])


def test_vander_like_torch(backend: str) -> None:
    x = rng.standard_normal(4)
    for call in (
        lambda m, a: m.vander(a),
        lambda m, a: m.vander(a, N=6, increasing=True),
        lambda m, a: m.vander(a, 0),
    ):
        like_torch(call, x)
        like_torch(call, np.array([1, -2, 3], dtype=np.int8))
    like_torch(lambda m, a: m.vander(a, 3), np.array([True, False]))
    gradcheck(lambda a: tw.vander(a, N=4), x)  # (torch's own vander backward raises)
    raises_like_torch(lambda m, a: m.vander(a.reshape(2, 2)), x, match=["one-dimensional"])
    raises_like_torch(lambda m, a: m.vander(a, -1), x, match=["non-negative"])


def test_chain_matmul_like_torch(backend: str) -> None:
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((3, 5)), rng.standard_normal((5, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        like_torch(lambda m, x, y, z: m.chain_matmul(x, y, z), a, b, c)
        like_torch(lambda m, x: m.chain_matmul(x), a)
        grads_like_torch(lambda m, x, y, z: m.chain_matmul(x, y, z), a, b, c)
        raises_like_torch(lambda m, x: m.chain_matmul(x[0]), a, match=["dimension"])
        raises_like_torch(lambda m: m.chain_matmul(), match=["one or more"])
    with pytest.warns(UserWarning, match="deprecated"):
        tw.chain_matmul(tw.tensor(a))


@pytest.mark.parametrize("p", [2.0, 1.0, 0.5, 3.0, float("inf"), 0.0])
def test_pdist_like_torch(backend: str, p: float) -> None:
    rows = rng.standard_normal((5, 3))
    like_torch(lambda m, x: m.pdist(x, p), rows)
    grads_like_torch(lambda m, x: m.pdist(x, p), rows)  # p = 0: in the graph, zero gradient
    # ties for the largest difference: PyTorch gives each the whole gradient for p = inf
    ties = np.array([[0.0, 1, 1], [0, 0, 0], [1, -1, 1], [2, 0, 2], [0, 1, 1]])
    like_torch(lambda m, x: m.pdist(x, p), ties)
    grads_like_torch(lambda m, x: m.pdist(x, p), ties)


def test_pdist_edges_like_torch(backend: str) -> None:
    like_torch(lambda m, x: m.pdist(x[:1]), VALUES)
    raises_like_torch(lambda m, x: m.pdist(x[0]), VALUES, match=["2D"])
    raises_like_torch(lambda m, x: m.pdist(x.long()), VALUES, match=["floating"])
    raises_like_torch(lambda m, x: m.pdist(x, -1.0), VALUES, match=["non-negative"])


@pytest.mark.parametrize(
    "call",
    [
        lambda m, **k: m.hann_window(9, **k),
        lambda m, **k: m.hann_window(8, False, **k),
        lambda m, **k: m.hamming_window(7, **k),
        lambda m, **k: m.hamming_window(7, False, 0.5, 0.4, **k),
        lambda m, **k: m.blackman_window(10, **k),
        lambda m, **k: m.blackman_window(5, periodic=False, **k),
        lambda m, **k: m.bartlett_window(6, **k),
        lambda m, **k: m.bartlett_window(7, False, **k),
        lambda m, **k: m.kaiser_window(8, **k),
        lambda m, **k: m.kaiser_window(9, False, 3.0, **k),
        lambda m, **k: m.hann_window(1, **k),
        lambda m, **k: m.kaiser_window(0, **k),
    ],
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_windows_like_torch(backend: str, call, dtype: str) -> None:
    like_torch(lambda m: call(m, dtype=getattr(m, dtype)))


def test_window_defaults_and_errors_like_torch(backend: str) -> None:
    like_torch(lambda m: m.hann_window(5))
    assert tw.hann_window(3, requires_grad=True).requires_grad
    raises_like_torch(lambda m: m.hann_window(4, dtype=m.int64), match=["floating"])
    raises_like_torch(lambda m: m.blackman_window(-1), match=["non-negative"])
    raises_like_torch(lambda m: m.kaiser_window(2.5), match=["window_length"])


def test_poisson_and_binomial_draws(backend: str) -> None:
    rates = tw.tensor([0.0, 0.5, 4.0, 30.0]).expand(4000, 4)
    draws = tw.poisson(rates)
    assert draws.dtype is tw.float32 and tuple(draws.shape) == (4000, 4)
    mean = np.asarray(draws).mean(0)
    np.testing.assert_allclose(mean, [0.0, 0.5, 4.0, 30.0], rtol=0.06, atol=0.02)
    g = tw.Generator().manual_seed(3)
    again = tw.Generator().manual_seed(3)
    assert tw.equal(tw.poisson(rates, g), tw.poisson(rates, again))
    count = tw.tensor([10.0, 3.0, 7.0], dtype=tw.float64).expand(4000, 3)
    prob = tw.tensor([0.5, 1.0, 0.0], dtype=tw.float64)
    hits = tw.binomial(count, prob.expand(4000, 3))
    assert hits.dtype is tw.float64
    np.testing.assert_allclose(np.asarray(hits).mean(0), [5.0, 3.0, 0.0], atol=0.15)
    raises_like_torch(lambda m: m.poisson(m.tensor([-1.0])), match=["non-negative"])
    raises_like_torch(lambda m: m.poisson(m.tensor([1, 2])))
    raises_like_torch(lambda m: m.binomial(m.tensor([1, 2]), m.tensor([0.5, 0.5])))


def test_put_like_torch(backend: str) -> None:
    index = np.array([[5, -1], [0, 5]])
    source = rng.standard_normal((2, 2))
    like_torch(lambda m, x, i, s: m.put(x, i, s, accumulate=True), VALUES, index, source)
    like_torch(lambda m, x, i, s: x.put(i[0], s[0]), VALUES, index, source)
    like_torch(lambda m, x, i, s: x.clone().put_(i, s, True), VALUES, index, source)
    grads_like_torch(lambda m, x, s: m.put(x, m.tensor(index), s, accumulate=True), VALUES, source)
    raises_like_torch(lambda m, x, i, s: x.put_(i + 40, s), VALUES, index, source, match=["range"])
    raises_like_torch(lambda m, x, i, s: x.put_(i.int(), s), VALUES, index, source, match=["long"])
    raises_like_torch(lambda m, x, i, s: x.put_(i, s[0]), VALUES, index, source, match=["same"])
    raises_like_torch(
        lambda m, x, i, s: x.put_(i, s.float()), VALUES, index, source, match=["dtype"]
    )


def test_apply_and_map_like_torch(backend: str) -> None:
    like_torch(lambda m, x: x.clone().apply_(lambda v: v * 2 if v > 0 else -v), VALUES)
    like_torch(lambda m, x: x.clone().apply_(lambda v: v / 2), INTS)
    like_torch(lambda m, x: x.clone().map_(x[0], lambda a, b: a * 10 + b), VALUES)
    raises_like_torch(lambda m, x: x.requires_grad_().apply_(abs), VALUES, match=["grad"])
    raises_like_torch(lambda m, x: x.map_(x.long(), max), VALUES)


def test_rnn_cell_base_like_torch() -> None:
    ours, theirs = tw.nn.RNNCellBase(3, 4, False, 2), torch.nn.RNNCellBase(3, 4, False, 2)
    assert repr(ours) == repr(theirs)
    shapes = {n: tuple(p.shape) for n, p in ours.named_parameters()}
    assert shapes == {n: tuple(p.shape) for n, p in theirs.named_parameters()}
    bound = 1 / np.sqrt(4)
    assert all(float(p.abs().max()) <= bound for p in ours.parameters())


def test_buffer_holds_its_data() -> None:
    data = tw.arange(3.0)
    buffer = tw.nn.Buffer(data, persistent=False)
    assert isinstance(buffer, tw.Tensor) and buffer.persistent is False
    assert tw.equal(buffer, data) and not buffer.requires_grad
    assert tw.nn.Buffer(tw.ones(2, requires_grad=True)).requires_grad
    assert tw.nn.Buffer().shape == (0,)
    with pytest.raises(TypeError, match="Buffer"):
        tw.nn.Buffer([1.0])


def test_buffer_assigned_to_a_module_is_registered() -> None:
    class Net(tw.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kept = tw.nn.Buffer(tw.ones(2))
            self.scratch = tw.nn.Buffer(tw.zeros(1), persistent=False)

    net = Net()
    assert [n for n, _ in net.named_buffers()] == ["kept", "scratch"]
    assert list(net.state_dict()) == ["kept"]


SIGNAL = rng.standard_normal((2, 40))


def _window(m, kind: str | None):
    return {
        None: None,
        "hann": m.hann_window(16, dtype=m.float64),
        "short": m.hann_window(10, dtype=m.float64),
    }[kind]


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(window="hann"),
        dict(window="short", hop_length=4, win_length=10),
        dict(window="hann", center=False, onesided=False),
        dict(window="hann", normalized=True, pad_mode="constant"),
        dict(window="hann", hop_length=5),
    ],
)
def test_stft_and_istft_like_torch(backend: str, kwargs: dict) -> None:
    def spectrum(m, x):
        k = dict(kwargs, window=_window(m, kwargs["window"]))
        return m.stft(x, 16, return_complex=True, **k)

    like_torch(lambda m, x: m.view_as_real(spectrum(m, x)), SIGNAL)  # (complex: exact only)
    like_torch(lambda m, x: m.view_as_real(spectrum(m, x[0])), SIGNAL)
    grads_like_torch(lambda m, x: spectrum(m, x).abs(), SIGNAL)
    if kwargs.get("center", True):

        def inverse(m, x):
            k = {key: v for key, v in kwargs.items() if key not in ("pad_mode",)}
            k["window"] = _window(m, kwargs["window"])
            return m.istft(spectrum(m, x), 16, length=37, **k)

        like_torch(inverse, SIGNAL)
        grads_like_torch(inverse, SIGNAL)


def test_stft_warnings_and_errors_like_torch(backend: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch warns of the missing window, then raises)
        raises_like_torch(lambda m, x: m.stft(x, 16), SIGNAL, match=["return_complex"])
    raises_like_torch(
        lambda m, x: m.stft(x, 16, window=m.ones(10), return_complex=True), SIGNAL, match=["win"]
    )
    with pytest.warns(UserWarning, match="window"):
        ours = tw.stft(tw.tensor(SIGNAL), 16, return_complex=True)
    with pytest.warns(UserWarning, match="deprecated"):
        old = tw.tensor(SIGNAL).stft(16, window=tw.ones(16, dtype=tw.float64), return_complex=False)
    assert tw.equal(tw.view_as_real(ours), old)
    whole = tw.stft(
        tw.tensor(SIGNAL), 16, window=tw.hann_window(16, dtype=tw.float64), return_complex=True
    )
    back = whole.istft(16, window=tw.hann_window(16, dtype=tw.float64))
    np.testing.assert_allclose(np.asarray(back), SIGNAL, atol=1e-12)
    raises_like_torch(
        lambda m, x: m.istft(
            m.stft(
                x, 16, window=m.hann_window(16, dtype=m.float64), center=False, return_complex=True
            ),
            16,
            window=m.hann_window(16, dtype=m.float64),
            center=False,
        ),
        SIGNAL,
        match=["overlap"],
    )


def test_incomplete_gamma_against_scipy_and_torch(backend: str) -> None:
    special = pytest.importorskip("scipy.special")
    a = np.concatenate([10 ** rng.uniform(-2, 2.3, 60), [0.5, 1.0, 30.0]])
    x = np.concatenate([a[:60] * rng.uniform(0, 3, 60), [40.0, 1e-3, 31.0]])
    for fn, reference in (("igamma", special.gammainc), ("igammac", special.gammaincc)):
        ours = np.asarray(getattr(tw, fn)(tw.tensor(a), tw.tensor(x)))
        np.testing.assert_allclose(ours, reference(a, x), rtol=1e-11, atol=1e-300)
        theirs = getattr(torch, fn)(torch.tensor(a), torch.tensor(x)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-7)  # (torch's is less exact)
    inf, nan = np.inf, np.nan
    # (PyTorch's edge rules come before NaN: P(nan, 0) = 0, P(nan, inf) = 1, P(inf, nan) = 0)
    edge_a = np.array([-1.0, 1, 0, 0, 2, inf, inf, 2, nan, 1, nan, nan, inf, 0, -1, nan])
    edge_x = np.array([1.0, -1, 1, 0, 0, 1, inf, inf, 1, nan, 0, inf, nan, nan, nan, -1])
    like_torch(lambda m, p, q: (m.igamma(p, q), m.igammac(p, q)), edge_a, edge_x)
    like_torch(lambda m, p, q: m.igamma(p.float(), q.half()), a[:5], x[:5])
    p, q = tw.tensor(a), tw.tensor(x)
    assert p.igammac_(q) is p and tw.equal(p, tw.igammac(tw.tensor(a), q))


def test_incomplete_gamma_gradient_and_errors_like_torch(backend: str) -> None:
    a, x = np.array([0.5, 2.0, 7.5]), np.array([0.3, 2.5, 9.0])
    for fn in ("igamma", "igammac"):
        grads_like_torch(lambda m, q, f=fn: getattr(m, f)(m.tensor(a), q), x)
        raises_like_torch(
            lambda m, p, q, f=fn: getattr(m, f)(p.requires_grad_(), q).sum().backward(),
            a,
            x,
            match=["not implemented"],
        )
    raises_like_torch(lambda m, p: m.igamma(p.long(), p.long()), a)
    raises_like_torch(lambda m, p: m.igamma(p, 2.0), a, match=["other"])


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("bartlett", {}),
        ("blackman", {}),
        ("cosine", {}),
        ("exponential", {"tau": 2.0}),
        ("gaussian", {"std": 1.5}),
        ("general_cosine", {"a": [0.4, 0.35, 0.25]}),
        ("general_hamming", {"alpha": 0.6}),
        ("hamming", {}),
        ("hann", {}),
        ("kaiser", {"beta": 5.0}),
        ("nuttall", {}),
    ],
)
@pytest.mark.parametrize("M", [0, 1, 6, 9])
def test_signal_windows_like_torch(backend: str, name: str, kwargs: dict, M: int) -> None:
    for sym in (True, False):
        for dtype in ("float64", "float32"):
            like_torch(
                lambda m, s=sym, d=dtype: getattr(m.signal.windows, name)(
                    M, sym=s, dtype=getattr(m, d), **kwargs
                )
            )
    like_torch(lambda m: getattr(m.signal.windows, name)(M, **kwargs))


def test_signal_window_errors_like_torch(backend: str) -> None:
    windows = ("hann", "gaussian", "kaiser", "exponential")
    for name in windows:
        raises_like_torch(lambda m, n=name: getattr(m.signal.windows, n)(-1), match=["M=-1"])
        raises_like_torch(
            lambda m, n=name: getattr(m.signal.windows, n)(4, dtype=m.int64), match=["float"]
        )
    raises_like_torch(lambda m: m.signal.windows.gaussian(5, std=-1.0), match=["positive"])
    raises_like_torch(lambda m: m.signal.windows.exponential(5, center=1.0), match=["Center"])
    raises_like_torch(lambda m: m.signal.windows.exponential(5, tau=0.0), match=["Tau"])
    raises_like_torch(lambda m: m.signal.windows.kaiser(5, beta=-1.0), match=["beta"])
    raises_like_torch(lambda m: m.signal.windows.general_cosine(5, a=[]), match=["empty"])
    for length in (6, 1):  # (one point: no shortcut to 1 when centred elsewhere)
        like_torch(lambda m, n=length: m.signal.windows.exponential(n, center=1.0, sym=False))


COORDS = np.array([0.0, 1.0, 3.0, 4.5, 5.0])


@pytest.mark.parametrize(
    "call",
    [
        lambda m, y: m.gradient(y),
        lambda m, y: m.gradient(y, dim=1, edge_order=2),
        lambda m, y: m.gradient(y, spacing=2.0, dim=-1),
        lambda m, y: m.gradient(y, spacing=[2.0, 0.5]),
        lambda m, y: m.gradient(y, spacing=m.tensor(3.0)),
        lambda m, y: m.gradient(y, spacing=(m.tensor(COORDS),), dim=1),
        lambda m, y: m.gradient(y, spacing=(m.tensor(COORDS),), dim=1, edge_order=2),
        lambda m, y: m.gradient(y, spacing=[m.tensor(COORDS[:3]), m.tensor(COORDS)], edge_order=2),
    ],
)
def test_gradient_like_torch(backend: str, call) -> None:
    like_torch(lambda m, y: call(m, y), SAMPLES)
    grads_like_torch(lambda m, y: m.stack(call(m, y)), SAMPLES)


def test_gradient_dtypes_and_errors_like_torch(backend: str) -> None:
    like_torch(lambda m, y: m.gradient(y), INTS)
    raises_like_torch(
        lambda m, y: m.gradient(y[:, :2], dim=1, edge_order=2), SAMPLES, match=["edge_order"]
    )
    raises_like_torch(lambda m, y: m.gradient(y, edge_order=3), SAMPLES, match=["edge_order"])
    raises_like_torch(
        lambda m, y: m.gradient(y, spacing=[1.0, 2.0, 3.0]), SAMPLES, match=["spacing"]
    )
