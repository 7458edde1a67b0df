"""Named regression tests for what the higher-order autograd sweep found, the graph
semantics of ``create_graph``/``retain_graph`` against PyTorch, and a cheap share of the
sweep on cuPyNumeric."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor.tensor_reference import builtin_class, make, supports
from tensorweaver.ops.reduce import product
from test_sweep_double_backward import TENSOR_CASES, check_case
from test_sweep_double_backward_nn import NN_CASES
from test_sweep_double_backward_other import OTHER_CASES
from tw_backends import entered


def _second(m: Any, fn: Callable, x: np.ndarray, w: np.ndarray) -> Any:
    """d/dx of sum(w * d fn(x).sum() / dx): a Hessian-vector product."""
    leaf = make(m, x, "float64", requires_grad=True)
    (g,) = m.autograd.grad(fn(m, leaf).sum(), leaf, create_graph=True)
    (h,) = m.autograd.grad((g * make(m, w)).sum(), leaf)
    return h.detach().numpy() if m is torch else np.asarray(h)


@pytest.mark.parametrize(
    ("x", "dims"),
    [
        ([[1.5, 0.0, -2.0], [0.0, 0.0, 1.2], [0.9, 1.1, -1.3]], (1,)),  # one zero, two zeros
        ([[1.5, 0.0], [2.0, -0.5]], (0, 1)),  # the whole tensor, one zero
        ([[[0.0, 2.0], [3.0, -1.0]], [[1.0, 0.5], [0.0, 4.0]]], (0, 2)),  # two of three axes
    ],
)
def test_prod_with_zeros_hessian_vector_product(backend: str, x: list, dims: tuple) -> None:
    """Before: prod's gradient divided the product by the input, with zeros masked out, so
    its derivative at the other elements of a group holding one zero was 0 (torch: the
    product of the rest); d2/dx2 of prod(x, 1) at [[1.5, 0, -2], ...] lost 3 of 9 terms."""
    x = np.array(x)
    w = np.random.default_rng(0).standard_normal(x.shape)
    # (several dims: the core's own product, which array API prod and gradients call)
    ours = _second(tw, lambda m, t: product(t, dims, False), x, w)

    def one_axis_at_a_time(m: Any, t: Any) -> Any:  # torch's prod takes one dim
        for d in sorted(dims, reverse=True):
            t = t.prod(d)
        return t

    np.testing.assert_allclose(ours, _second(torch, one_axis_at_a_time, x, w), atol=1e-12)


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "trunc", "sgn"])
def test_zero_gradient_needs_no_grad(backend: str, name: str) -> None:
    """Before: a gradient that is zero by definition (sign, floor, ...) was ``g * 0``, which
    required grad under create_graph (torch: a zeros tensor that does not)."""
    x = tw.tensor([[0.5, -1.5], [2.5, -0.2]], requires_grad=True)
    v = tw.ones(2, 2, requires_grad=True)
    (g,) = tw.autograd.grad(getattr(tw, name)(x), x, v, create_graph=True)
    assert not g.requires_grad and g.grad_fn is None
    assert not g.abs().sum().item()


PIECEWISE_LINEAR = {
    "relu": lambda m, x: m.relu(x),
    "leaky_relu": lambda m, x: m.nn.functional.leaky_relu(x, 0.2),
    "hardtanh": lambda m, x: m.nn.functional.hardtanh(x, -1.0, 1.0),
    "relu6": lambda m, x: m.nn.functional.relu6(x * 4),
    "threshold": lambda m, x: m.nn.functional.threshold(x, 0.5, -1.0),
    "hardshrink": lambda m, x: m.nn.functional.hardshrink(x, 0.5),
    "softshrink": lambda m, x: m.nn.functional.softshrink(x, 0.5),
    "rrelu": lambda m, x: m.nn.functional.rrelu(x),
}


@pytest.mark.parametrize("name", PIECEWISE_LINEAR)
def test_piecewise_linear_gradient_requires_grad_like_torch(backend: str, name: str) -> None:
    """Before: relu's and these activations' gradients under create_graph were g masked by a
    constant, so ``grad(f(x).sum(), x, create_graph=True)`` did not require grad and a
    penalty on it raised "does not require grad" (torch: a <Name>BackwardBackward0 node
    that reads x, zero second derivative). Ties and NaN included."""
    fn = PIECEWISE_LINEAR[name]
    results = []
    for m in (tw, torch):
        x = make(m, np.array([1.5, -1.0, 0.5, -0.5, 1.0, 0.0, np.nan, 2.0]), "float64", True)
        y = fn(m, x)
        (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        (h,) = m.autograd.grad((g * g).sum(), x)
        host = np.asarray(g.detach().tolist()), np.asarray(h.tolist())
        results.append((y.grad_fn.name(), g.requires_grad, g.grad_fn.name(), host))
    assert results[0][:3] == results[1][:3]
    for a, b in zip(results[0][3], results[1][3]):
        np.testing.assert_array_equal(a, b)


def _nested(fn: Callable, xa: np.ndarray, vectors: list, third: bool) -> Any:
    """sum(u * d/dx sum(w * d/dx sum(v * fn(x)))), or its gradient in x with ``third``."""
    v, w, u = (tw.tensor(a) for a in vectors)
    x = tw.tensor(xa, requires_grad=True)
    (g,) = tw.autograd.grad(fn(x), x, v, create_graph=True)
    (h,) = tw.autograd.grad((g * w).sum(), x, create_graph=True)
    s = (h * u).sum()
    return np.asarray(tw.autograd.grad(s, x)[0]) if third else s.item()


F = tw.nn.functional


@pytest.mark.parametrize(
    ("name", "fn", "shape"),
    [
        ("layer_norm", lambda x: F.layer_norm(x, (3,)), (4, 3)),
        ("batch_norm", lambda x: F.batch_norm(x, None, None, training=True), (4, 3)),
        ("instance_norm", lambda x: F.instance_norm(x), (2, 2, 3)),
        ("logcumsumexp", lambda x: tw.logcumsumexp(x, 1), (3, 4)),
    ],
)
def test_third_derivative_by_finite_differences(
    backend: str, name: str, fn: Callable, shape: tuple
) -> None:
    """Third derivatives where torch 2.13's are wrong (layer, batch and instance norm: its
    hand-written double backward is not differentiated right, 50 off for layer_norm on this
    input) or NaN (logcumsumexp): tensorweaver's match central differences of its second
    derivatives, which match torch's."""
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(shape)
    vectors = [rng.standard_normal(shape) for _ in range(3)]
    third = _nested(fn, x0, vectors, third=True)
    eps, numeric = 1e-5, np.zeros(shape)
    for i in np.ndindex(shape):
        up, down = x0.copy(), x0.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (_nested(fn, up, vectors, False) - _nested(fn, down, vectors, False)) / (
            2 * eps
        )
    np.testing.assert_allclose(third, numeric, rtol=1e-5, atol=1e-6)


def _twice(m: Any, fn: Callable, retain: bool) -> str:
    """The class of the error the second ``backward`` raises, or "ok"."""
    x = make(m, np.linspace(-1.0, 1.0, 12).reshape(3, 4), "float64", requires_grad=True)
    y = fn(m, x)
    y.backward(retain_graph=retain)
    try:
        y.backward()
    except Exception as error:  # noqa: BLE001 - the class is compared with torch's
        return builtin_class(error).__name__
    return "ok"


SAVING = {
    "exp": lambda m, x: m.exp(x).sum(),
    "mul": lambda m, x: (x * x).sum(),
    "matmul": lambda m, x: (x @ x.T).sum(),
    "softmax": lambda m, x: m.softmax(x, 1)[:, 0].sum(),
    "linear": lambda m, x: m.nn.functional.linear(x, m.ones(2, 4, dtype=m.float64)).sum(),
    "cross_entropy": lambda m, x: m.nn.functional.cross_entropy(x, m.tensor([0, 1, 2])),
    "layer_norm": lambda m, x: m.nn.functional.layer_norm(x, (4,)).sum(),
    "relu": lambda m, x: m.relu(x).sum(),
}
#: Graphs that save no tensor: torch can run their backward twice without retain_graph.
SAVING_NOTHING = {
    "add": lambda m, x: (x + 1).sum(),
    "neg": lambda m, x: (-x).sum(),
    "reshape": lambda m, x: x.reshape(-1).sum(),
    "mean": lambda m, x: x.mean(),
}


@pytest.mark.parametrize("retain", [False, True])
@pytest.mark.parametrize(
    "name",
    [
        *SAVING,
        *SAVING_NOTHING,
    ],
)
def test_second_backward_like_torch(backend: str, name: str, retain: bool) -> None:
    """A second backward through freed buffers raises RuntimeError, as torch's; with
    ``retain_graph=True`` it runs, and a graph that saved no tensor runs it anyway."""
    fn = {**SAVING, **SAVING_NOTHING}[name]
    assert _twice(tw, fn, retain) == _twice(torch, fn, retain)


def _penalty(m: Any, fn: Callable) -> tuple:
    x = make(m, np.linspace(-1.0, 1.0, 12).reshape(3, 4), "float64", requires_grad=True)
    y = fn(m, x)
    m.autograd.grad(y, x, create_graph=True)  # create_graph retains the graph
    y.backward(create_graph=True)
    flags = (x.grad.requires_grad, x.grad.grad_fn is not None)
    (h,) = m.autograd.grad((x.grad**2).sum(), x)
    host = (lambda t: t.detach().numpy()) if m is torch else np.asarray
    return flags, host(x.grad.detach()), host(h)


@pytest.mark.parametrize("name", ["exp", "mul", "matmul", "softmax", "cross_entropy", "relu"])
def test_backward_create_graph_like_torch(backend: str, name: str) -> None:
    """``create_graph=True`` retains the graph (the same output is differentiated again),
    and ``backward(create_graph=True)`` leaves a ``.grad`` with a grad_fn, as torch's, that
    a gradient penalty is differentiated through."""
    ours, theirs = _penalty(tw, SAVING[name]), _penalty(torch, SAVING[name])
    assert ours[0] == theirs[0], f"(requires_grad, grad_fn) of .grad {ours[0]}, torch {theirs[0]}"
    for a, b in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


#: A cheap share of the sweep on cuPyNumeric (each op there costs about 0.4 ms).
CUNUMERIC_SHARE = (
    "exp log tanh sigmoid pow_tensor div prod_zeros norm var logsumexp cumprod softmax "
    "gather matmul einsum gelu_tanh softplus_beta cross_entropy_smoothing mse "
    "bce_with_logits layer_norm linear conv1d avg_pool2d leaky_relu hardtanh "
    "clamp_tensor_both_ties"
).split()


@pytest.mark.cunumeric
@pytest.mark.parametrize("name", CUNUMERIC_SHARE)
def test_double_backward_on_cunumeric(name: str) -> None:
    case = next(c for c in TENSOR_CASES + NN_CASES + OTHER_CASES if c.name == name)
    with entered("cunumeric", float64=True, seed=0):
        check_case(case, 0)


@pytest.mark.parametrize("name", ["leaky_relu", "rrelu"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_leaky_relu_half_gradient_like_torch(backend: str, name: str, dtype: str) -> None:
    """Before: leaky_relu's one node scaled g by its slope as a half tensor, rounding 0.2
    (or rrelu's mean slope) to half before the product: gradients 1 ulp off torch's, which
    multiplies a half g by the slope in float. First and second order (the gradient of the
    gradient in g) both."""
    if not supports(dtype):
        pytest.skip(f"{backend} has no {dtype}")
    x = np.array([1.5, -1.0, 0.5, -0.7, -0.3, 0.0, -2.5, 3.0])
    v = np.array([0.3, 0.7, -1.1, 0.9, 1.3, -0.6, 0.11, 2.0])
    results = []
    for m in (tw, torch):
        leaf = make(m, x, dtype, True)
        up = make(m, v, dtype, True)
        (g,) = m.autograd.grad(PIECEWISE_LINEAR[name](m, leaf), leaf, up, create_graph=True)
        (gg,) = m.autograd.grad(g, up, make(m, v[::-1].copy(), dtype))
        results.append([np.asarray(t.detach().float().tolist()) for t in (g, gg)])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", [n for n in PIECEWISE_LINEAR if n not in ("relu", "relu6")])
def test_piecewise_linear_input_modified_in_place_raises(backend: str, name: str) -> None:
    """Before: the one node of leaky_relu, hardtanh, threshold and the shrinks did not
    count as reading its input, so backward after an in-place change of that input gave a
    gradient where torch (whose backward saves self) raises; softshrink raised before the
    sweep. relu saves its output instead (not the input), in both; relu6 is hardtanh
    (its case here differentiates x * 4, which reads no input)."""
    fn = PIECEWISE_LINEAR[name]
    for m in (tw, torch):
        x = m.tensor([0.5, -2.0, 1.5, 0.2], dtype=m.float64, requires_grad=True)
        a = x * 1
        y = fn(m, a)
        a.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace|in-place"):
            y.sum().backward()
