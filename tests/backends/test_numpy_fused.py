"""The NumPy backend's fused composites against float64 loops, direct formulas and
central finite differences.

Convolution is bilinear and pooling piecewise linear, so a central difference of
``sum(g * f(x))`` is their exact derivative up to rounding: tolerances stay tight.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from tensorweaver_numpy import plugin

pytestmark = pytest.mark.filterwarnings("error:.*encountered in:RuntimeWarning")


@pytest.fixture(scope="module")
def backend():
    return plugin.tw_create_backend(device=plugin.tw_devices(probe=True)[0])


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def numeric_grad(f, x: np.ndarray, g: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d/dx of sum(g * f(x)) by central differences, one element at a time."""
    grad = np.empty_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        up = np.sum(g * f(x))
        x[i] = old - eps
        down = np.sum(g * f(x))
        x[i] = old
        grad[i] = (up - down) / (2 * eps)
    return grad


# softmax and log_softmax ----------------------------------------------------------------


def softmax_ref(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax_and_log_softmax_match_the_formula(backend, rng, axis):
    x = rng.normal(size=(3, 4, 5)) * 3
    y, _ = backend.fused_softmax(x, axis)
    np.testing.assert_allclose(y, softmax_ref(x, axis), rtol=1e-13)
    ly, _ = backend.fused_log_softmax(x, axis)
    np.testing.assert_allclose(ly, np.log(softmax_ref(x, axis)), rtol=1e-12, atol=1e-14)


def test_softmax_is_stable_for_huge_and_infinite_inputs(backend):
    x = np.array([[1000.0, 1000.0, -1000.0], [-np.inf, 0.0, -np.inf], [-1e308, 1e308, 0.0]])
    y, _ = backend.fused_softmax(x, 1)
    np.testing.assert_allclose(y, [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    ly, _ = backend.fused_log_softmax(x, 1)
    np.testing.assert_allclose(
        ly[:2], [[-np.log(2), -np.log(2), -2000 - np.log(2)], [-np.inf, 0, -np.inf]]
    )


def test_softmax_keeps_float32_and_handles_an_empty_axis(backend, rng):
    x = rng.normal(size=(2, 3)).astype(np.float32)
    y, _ = backend.fused_softmax(x, 1)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, softmax_ref(x.astype(np.float64), 1), rtol=1e-6)
    empty, _ = backend.fused_log_softmax(np.zeros((2, 0)), 1)
    assert empty.shape == (2, 0)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [0, 1])
def test_softmax_backward_matches_finite_differences(backend, rng, name, axis):
    forward = getattr(backend, f"fused_{name}")
    x, g = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    _, saved = forward(x, axis)
    (grad,) = getattr(backend, f"fused_{name}_backward")(saved, g, (True,))
    want = numeric_grad(lambda v: forward(v, axis)[0], x.copy(), g)
    np.testing.assert_allclose(grad, want, rtol=1e-7, atol=1e-9)


# conv2d ---------------------------------------------------------------------------------


def conv2d_ref(x, w, b, stride, padding, dilation, groups):
    """The definition, one output element at a time."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    xp[:, :, ph : ph + h, pw : pw + wd] = x
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for n_, k, i, j in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = k // og
        for ci, p, q in itertools.product(range(cg), range(kh), range(kw)):
            out[n_, k, i, j] += (
                xp[n_, g * cg + ci, i * sh + p * dh, j * sw + q * dw] * w[k, ci, p, q]
            )
    return out if b is None else out + b.reshape(1, o, 1, 1)


# (channels, out channels, kernel, stride, padding, dilation, groups)
CONVS = [
    (3, 4, (3, 3), (1, 1), (0, 0), (1, 1), 1),
    (3, 2, (3, 2), (2, 1), (1, 2), (1, 1), 1),
    (2, 3, (2, 3), (1, 2), (1, 1), (2, 1), 1),
    (4, 6, (3, 3), (1, 1), (1, 1), (1, 1), 2),
    (3, 3, (2, 2), (2, 2), (0, 1), (1, 2), 3),
]


@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("c, o, kernel, stride, padding, dilation, groups", CONVS)
def test_conv2d_forward_and_backward(
    backend, rng, c, o, kernel, stride, padding, dilation, groups, bias
):
    x = rng.normal(size=(2, c, 6, 7))
    w = rng.normal(size=(o, c // groups, *kernel))
    b = rng.normal(size=o) if bias else None
    args = (stride, padding, dilation, groups)
    out, saved = backend.fused_conv2d(x, w, b, *args)
    want = conv2d_ref(x, w, b, *args)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)

    g = rng.normal(size=out.shape)
    grad_x, grad_w, grad_b = backend.fused_conv2d_backward(saved, g, (True, True, bias))
    assert grad_x.shape == x.shape and grad_w.shape == w.shape
    num_x = numeric_grad(lambda v: backend.fused_conv2d(v, w, b, *args)[0], x.copy(), g)
    num_w = numeric_grad(lambda v: backend.fused_conv2d(x, v, b, *args)[0], w.copy(), g)
    np.testing.assert_allclose(grad_x, num_x, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(grad_w, num_w, rtol=1e-7, atol=1e-8)
    if bias:
        num_b = numeric_grad(lambda v: backend.fused_conv2d(x, w, v, *args)[0], b.copy(), g)
        np.testing.assert_allclose(grad_b, num_b, rtol=1e-7, atol=1e-8)
    else:
        assert grad_b is None


def test_conv2d_keeps_float32(backend, rng):
    x = rng.normal(size=(1, 2, 5, 5)).astype(np.float32)
    w = rng.normal(size=(3, 2, 3, 3)).astype(np.float32)
    b = rng.normal(size=3).astype(np.float32)
    out, saved = backend.fused_conv2d(x, w, b, (1, 1), (1, 1), (1, 1), 1)
    assert out.dtype == np.float32
    want = conv2d_ref(*(a.astype(np.float64) for a in (x, w, b)), (1, 1), (1, 1), (1, 1), 1)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    grads = backend.fused_conv2d_backward(saved, np.ones_like(out), (True, True, True))
    assert [gr.dtype for gr in grads] == [np.float32] * 3


# max_pool2d -----------------------------------------------------------------------------


def max_pool_ref(x, kernel, stride, padding):
    """Output and input gradient of sum(g * pool(x)) for g = 1, window by window; the
    gradient goes to the first maximum of each window in row-major order."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    xp = np.full((n, c, h + 2 * ph, w + 2 * pw), -np.inf)
    xp[:, :, ph : ph + h, pw : pw + w] = x
    oh, ow = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    out = np.empty((n, c, oh, ow))
    grad = np.zeros_like(xp)
    for b, k, i, j in itertools.product(range(n), range(c), range(oh), range(ow)):
        window = xp[b, k, i * sh : i * sh + kh, j * sw : j * sw + kw]
        p, q = np.unravel_index(np.argmax(window), window.shape)
        out[b, k, i, j] = window[p, q]
        grad[b, k, i * sh + p, j * sw + q] += 1.0
    return out, grad[:, :, ph : ph + h, pw : pw + w]


POOLS = [((2, 2), (2, 2), (0, 0)), ((3, 3), (1, 1), (1, 1)), ((3, 2), (2, 1), (1, 0))]


@pytest.mark.parametrize("kernel, stride, padding", POOLS)
def test_max_pool2d_with_ties_sends_the_gradient_to_the_first_maximum(
    backend, rng, kernel, stride, padding
):
    x = rng.integers(0, 3, size=(2, 2, 6, 5)).astype(np.float64)  # many ties
    out, saved = backend.fused_max_pool2d(x, kernel, stride, padding)
    want_out, want_grad = max_pool_ref(x, kernel, stride, padding)
    np.testing.assert_array_equal(out, want_out)
    (grad,) = backend.fused_max_pool2d_backward(saved, np.ones_like(out), (True,))
    np.testing.assert_array_equal(grad, want_grad)


@pytest.mark.parametrize("kernel, stride, padding", POOLS)
def test_max_pool2d_backward_matches_finite_differences(backend, rng, kernel, stride, padding):
    x = rng.permutation(60).reshape(1, 2, 6, 5).astype(np.float64)  # distinct: no ties
    out, saved = backend.fused_max_pool2d(x, kernel, stride, padding)
    g = rng.normal(size=out.shape)
    (grad,) = backend.fused_max_pool2d_backward(saved, g, (True,))
    forward = lambda v: backend.fused_max_pool2d(v, kernel, stride, padding)[0]  # noqa: E731
    np.testing.assert_allclose(grad, numeric_grad(forward, x.copy(), g, eps=1e-3), rtol=1e-9)


def test_max_pool2d_propagates_nan_and_pools_integers(backend):
    x = np.array([[[[1.0, np.nan], [3.0, 2.0]]]])
    out, _ = backend.fused_max_pool2d(x, (2, 2), (2, 2), (0, 0))
    assert np.isnan(out).all()
    xi = np.arange(16, dtype=np.int32).reshape(1, 1, 4, 4)
    out, _ = backend.fused_max_pool2d(xi, (2, 2), (1, 1), (1, 1))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, max_pool_ref(xi, (2, 2), (1, 1), (1, 1))[0])


def test_linear_matches_numpy_and_skips_unneeded_gradients(backend, rng):
    x, w, b = rng.normal(size=(2, 3, 5)), rng.normal(size=(4, 5)), rng.normal(size=4)
    out, saved = backend.fused_linear(x, w, b)
    np.testing.assert_allclose(out, x @ w.T + b, rtol=1e-13)
    g = rng.normal(size=out.shape)
    gx, gw, gb = backend.fused_linear_backward(saved, g, (True, True, True))
    np.testing.assert_allclose(gx, g @ w, rtol=1e-13)
    np.testing.assert_allclose(gw, np.einsum("abo,abi->oi", g, x), rtol=1e-13)
    np.testing.assert_allclose(gb, g.sum((0, 1)), rtol=1e-13)
    assert gw.flags.c_contiguous  # the weight's own layout: optimizer ops stay fast
    skipped = backend.fused_linear_backward(saved, g, (False, True, False))
    assert skipped[0] is None and skipped[2] is None


def test_cross_entropy_matches_its_formula_and_finite_differences(backend, rng):
    x = rng.normal(size=(5, 4))
    target = np.array([0, 3, -100, 1, 3])
    loss, saved = backend.fused_cross_entropy(x, target, -100)
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    kept = target != -100
    want = -logp[np.arange(5)[kept], target[kept]].mean()
    np.testing.assert_allclose(loss, want, rtol=1e-13)
    g = np.array(0.7)
    grad, none = backend.fused_cross_entropy_backward(saved, g, (True, False))
    assert none is None
    numeric = numeric_grad(lambda v: backend.fused_cross_entropy(v, target, -100)[0], x.copy(), g)
    np.testing.assert_allclose(grad, numeric, rtol=1e-7, atol=1e-9)


def test_cross_entropy_with_every_target_ignored_is_nan_with_zero_gradient(backend, rng):
    x = rng.normal(size=(3, 4))
    loss, saved = backend.fused_cross_entropy(x, np.full(3, -100), -100)
    assert np.isnan(loss)
    grad, _ = backend.fused_cross_entropy_backward(saved, np.array(1.0), (True, False))
    np.testing.assert_array_equal(grad, np.zeros((3, 4)))


@pytest.mark.parametrize("kernel, stride, padding", POOLS)
def test_max_pool2d_routes_inf_and_nan_gradients_to_the_first_maximum(
    backend, rng, kernel, stride, padding
):
    """Overlapping windows with ties, and upstream gradients holding inf and NaN: each
    window's gradient lands on its first maximum and nowhere else (no inf * 0 = NaN spill)."""
    x = rng.integers(0, 3, size=(1, 2, 6, 5)).astype(np.float64)
    out, saved = backend.fused_max_pool2d(x, kernel, stride, padding)
    g = rng.normal(size=out.shape)
    g.flat[::3] = np.inf
    g.flat[1::5] = np.nan
    (grad,) = backend.fused_max_pool2d_backward(saved, g, (True,))
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    xp = np.full((n, c, h + 2 * ph, w + 2 * pw), -np.inf)
    xp[:, :, ph : ph + h, pw : pw + w] = x
    want = np.zeros_like(xp)
    for b, k, i, j in itertools.product(range(n), range(c), *map(range, out.shape[2:])):
        window = xp[b, k, i * sh : i * sh + kh, j * sw : j * sw + kw]
        p, q = np.unravel_index(np.argmax(window), window.shape)
        want[b, k, i * sh + p, j * sw + q] += g[b, k, i, j]
    np.testing.assert_array_equal(grad, want[:, :, ph : ph + h, pw : pw + w])
