"""Autograd behaves as PyTorch's: backward and accumulation, retain_graph, freed graphs,
create_graph and double backward (second derivatives by finite differences),
``tw.autograd.grad``, ``tw.autograd.Function``, grad modes, ``detach``, ``retain_grad``, and
the errors PyTorch raises for misuse.
"""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck, gradgradcheck
from tensor_reference import assert_values, host, like_torch, raises_like_torch, uniform

X = uniform((2, 3), 0.5, 2.0)


def leaf(values=X):
    return tw.tensor(values, requires_grad=True)


@pytest.mark.cunumeric
def test_backward_of_a_scalar(backend):
    x = leaf()
    y = (x * x).sum()
    assert y.requires_grad and not y.is_leaf
    assert y.backward() is None
    assert_values(x.grad, 2 * X, dtype="float64")
    assert x.grad.device == x.device and not x.grad.requires_grad


def test_gradients_accumulate_until_reset(backend):
    x = leaf()
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert_values(x.grad, 3 + 2 * X)
    x.grad = None
    x.exp().sum().backward()
    assert_values(x.grad, np.exp(X))
    x.grad.zero_()
    x.sum().backward()
    assert_values(x.grad, np.ones_like(X))


def test_a_tensor_used_twice_gets_both_gradients(backend):
    x = leaf()
    (x * x + x.sin() * x).sum().backward()
    assert_values(x.grad, 2 * X + np.cos(X) * X + np.sin(X))


def test_backward_with_a_gradient_for_non_scalar_outputs(backend):
    x = leaf()
    v = uniform(X.shape, seed=1)
    (x * 2).backward(tw.tensor(v))
    assert_values(x.grad, 2 * v)
    z = leaf()
    (z * 2).backward(gradient=tw.tensor(v))
    assert_values(z.grad, 2 * v)


def test_retain_graph_allows_a_second_backward(backend):
    x = leaf()
    y = x.exp().sum()
    y.backward(retain_graph=True)
    y.backward()
    assert_values(x.grad, 2 * np.exp(X))


def test_second_backward_through_a_freed_graph_is_an_error(backend):
    def twice(m, x):
        y = x.requires_grad_().exp().sum()
        y.backward()
        y.backward()

    raises_like_torch(twice, X, match=["retain_graph"])


def test_backward_frees_the_graph_without_the_cycle_collector(backend):
    # DESIGN.md: free the graph as backward consumes it; no tensor-node reference cycles.
    x = leaf()
    gc.disable()
    try:
        h = x.exp() * 2
        alive = weakref.ref(h)
        y = h.sum()
        del h
        y.backward()
        del y
        assert alive() is None, "an intermediate tensor outlives its graph"
    finally:
        gc.enable()


def test_create_graph_gives_differentiable_gradients(backend):
    x = leaf()
    (x**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    assert_values(x.grad, 3 * X**2)
    (g,) = tw.autograd.grad((x**3).sum(), x, create_graph=True)
    g.sum().backward()
    assert_values(x.grad, 3 * X**2 + 6 * X)


SECOND_ORDER = {
    "exp": lambda x: x.exp(),
    "log": lambda x: x.log(),
    "sqrt": lambda x: x.sqrt(),
    "sin": lambda x: x.sin(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "erf": lambda x: tw.erf(x),
    "reciprocal": lambda x: x.reciprocal(),
    "pow": lambda x: x**2.5,
    "pow-tensor": lambda x: x ** x.flip(0),
    "mul": lambda x: x * x.flip(1),
    "div": lambda x: x.flip(0) / x,
    "maximum": lambda x: tw.maximum(x * x, x.flip(0)),
    "where": lambda x: tw.where(x > 1, x * x, x.exp()),
    "matmul": lambda x: x @ x.mT,
    "sum-mean": lambda x: (x * x).sum(0) * x.mean(1, keepdim=True),
    "prod": lambda x: x.prod(dim=1),
    "amax": lambda x: (x * x).amax(dim=0),
    "var": lambda x: x.var(dim=1),
    "std": lambda x: x.std(),
    "norm": lambda x: x.norm(dim=0),
    "logsumexp": lambda x: x.logsumexp(dim=1),
    "softmax": lambda x: tw.nn.functional.softmax(x, dim=1),
    "log_softmax": lambda x: tw.nn.functional.log_softmax(x, dim=0),
    "cumsum": lambda x: (x * x).cumsum(1),
    "gather": lambda x: (x * x).gather(1, tw.tensor([[2, 0], [1, 1]])),
    "index": lambda x: (x.exp())[tw.tensor([1, 0, 1])],
    "clamp": lambda x: (x * x).clamp(min=1.0, max=3.0),
}


@pytest.mark.parametrize("name", SECOND_ORDER.keys())
def test_double_backward(backend, name):
    gradgradcheck(SECOND_ORDER[name], X)


@pytest.mark.cunumeric
def test_double_backward_on_every_backend(backend):
    gradgradcheck(lambda x: (x.tanh() @ x.mT).sum(1), X)


def test_autograd_grad_returns_gradients_without_touching_grad(backend):
    x, w = leaf(), leaf(uniform((3,), seed=2))
    y = ((x * w).sum(1) ** 2).sum()
    gx, gw = tw.autograd.grad(y, (x, w))
    s = (X * host(w)).sum(1)
    assert_values(gx, 2 * s[:, None] * host(w))
    assert_values(gw, (2 * s[:, None] * X).sum(0))
    assert x.grad is None and w.grad is None


def test_autograd_grad_with_grad_outputs(backend):
    x = leaf()
    v = uniform(X.shape, seed=3)
    (g,) = tw.autograd.grad([x.sin()], [x], grad_outputs=[tw.tensor(v)])
    assert_values(g, np.cos(X) * v)


def test_autograd_grad_of_an_unused_input(backend):
    def unused(m, x, allow_unused):
        z = x.clone().requires_grad_()
        x.requires_grad_()
        return m.autograd.grad((x * 2).sum(), [x, z], allow_unused=allow_unused)

    gx, gz = like_torch(unused, X, True)
    assert gz is None
    raises_like_torch(unused, X, False, match=["allow_unused"])


def test_autograd_grad_frees_the_graph_unless_retained(backend):
    x = leaf()
    y = x.exp().sum()
    tw.autograd.grad(y, x, retain_graph=True)
    (g,) = tw.autograd.grad(y, x)
    assert_values(g, np.exp(X))
    with pytest.raises(RuntimeError, match="retain_graph"):
        tw.autograd.grad(y, x)


class ScaledCube(tw.autograd.Function):
    """y = scale * x**3 + x * w, with a hand-written backward."""

    @staticmethod
    def forward(ctx, x, w, scale):
        ctx.save_for_backward(x, w)
        ctx.scale = scale
        return scale * x**3 + x * w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad * (3 * ctx.scale * x**2 + w), grad * x, None


@pytest.mark.cunumeric
def test_custom_function(backend):
    x, w = leaf(), leaf(uniform((3,), seed=4))
    y = ScaledCube.apply(x, w, 0.5)
    assert y.requires_grad
    assert_values(y, 0.5 * X**3 + X * host(w))
    gradcheck(lambda a, b: ScaledCube.apply(a, b, 0.5), X, host(w))


def test_custom_function_forward_does_not_record(backend):
    seen = {}

    class Probe(tw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen["grad_enabled"] = tw.is_grad_enabled()
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    y = Probe.apply(leaf())
    assert seen["grad_enabled"] is False
    y.sum().backward()
    with tw.no_grad():
        assert not Probe.apply(leaf()).requires_grad


def test_custom_function_with_two_outputs(backend):
    class SinCos(tw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, grad_sin, grad_cos):
            (x,) = ctx.saved_tensors
            return grad_sin * x.cos() - grad_cos * x.sin()

    gradcheck(lambda x: tw.cat(SinCos.apply(x)), X)
    gradcheck(lambda x: SinCos.apply(x)[1] * 3, X)


def test_no_grad_and_enable_grad(backend):
    x = leaf()
    assert tw.is_grad_enabled()
    with tw.no_grad():
        assert not tw.is_grad_enabled()
        y = x * 2
        with tw.enable_grad():
            assert tw.is_grad_enabled()
            z = x * 2
    assert tw.is_grad_enabled()
    assert not y.requires_grad and y.is_leaf
    assert z.requires_grad and not z.is_leaf


def test_no_grad_as_a_decorator(backend):
    @tw.no_grad()
    def evaluate(x):
        return x * 2

    assert not evaluate(leaf()).requires_grad
    assert tw.is_grad_enabled()


def test_set_grad_enabled(backend):
    x = leaf()
    with tw.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert tw.is_grad_enabled()
    tw.set_grad_enabled(False)
    try:
        assert not tw.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        tw.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_grad_mode_is_per_thread(backend):
    seen = []
    with tw.no_grad():
        thread = threading.Thread(target=lambda: seen.append(tw.is_grad_enabled()))
        thread.start()
        thread.join()
    assert seen == [True]


def test_detach_and_data_cut_the_graph(backend):
    x = leaf()
    y = x * 3
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    (y * d).sum().backward()  # d counts as a constant
    assert_values(x.grad, 3 * 3 * X)
    assert not x.data.requires_grad
    assert_values(x.data, X)


def test_retain_grad_keeps_an_intermediate_gradient(backend):
    x = leaf()
    y = x * 2
    y.retain_grad()
    z = x * 3
    (y * z).sum().backward()
    assert_values(y.grad, 3 * X)
    assert_values(x.grad, 12 * X)


def test_grad_of_a_leaf_not_requiring_grad_stays_none(backend):
    x, c = leaf(), tw.tensor(X)
    (x * c).sum().backward()
    assert c.grad is None and not c.requires_grad
    assert_values(x.grad, X)


def test_results_of_integer_and_comparison_ops_do_not_require_grad(backend):
    x = leaf()
    for result in (x > 1, x.argmax(), x.max(dim=1).indices, x.long(), x.nonzero()):
        assert not result.requires_grad


def test_gradient_flows_through_casts_between_floats(backend):
    x = leaf()
    (x.float() * 2).double().sum().backward()
    assert x.grad.dtype is tw.float64
    assert_values(x.grad, np.full_like(X, 2.0))


def test_requires_grad_propagates(backend):
    x, c = leaf(), tw.tensor(X)
    assert (x + c).requires_grad and not (c + c).requires_grad
    assert (c * 2).is_leaf and not (x * 2).is_leaf


def test_deep_graphs_do_not_hit_the_recursion_limit(backend):
    x = tw.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0 + 0.0
    y.sum().backward()
    assert_values(x.grad, [1.0])


def test_in_place_on_a_leaf_requiring_grad_is_an_error(backend):
    def in_place(m, x):
        x.requires_grad_().add_(1.0)

    raises_like_torch(in_place, X, match=["leaf", "in-place|in place|inplace"])

    def set_item(m, x):
        x.requires_grad_()[0] = 1.0

    raises_like_torch(set_item, X, match=["leaf"])


def test_backward_of_a_non_scalar_needs_a_gradient(backend):
    raises_like_torch(lambda m, x: (x.requires_grad_() * 2).backward(), X, match=["scalar"])


def test_backward_gradient_of_the_wrong_shape_is_an_error(backend):
    raises_like_torch(
        lambda m, x: (x.requires_grad_() * 2).backward(m.ones(3)),
        X,
        match=[r"\b3\b", r"2, 3"],
    )


def test_backward_of_a_tensor_without_grad_is_an_error(backend):
    raises_like_torch(lambda m, x: x.sum().backward(), X, match=["grad"])


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_integer_tensors_cannot_require_grad(backend, dtype):
    values = [1, 0, 2]
    raises_like_torch(
        lambda m, v: m.tensor(v, dtype=getattr(m, dtype), requires_grad=True),
        values,
        match=["float"],
    )
    raises_like_torch(
        lambda m, v: m.tensor(v, dtype=getattr(m, dtype)).requires_grad_(), values, match=["float"]
    )


def test_function_without_materialized_grads_gets_none_for_unused_outputs():
    seen = []

    class Pair(tw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            seen.append((ga is None, gb is None))
            return (0 if ga is None else ga * 2) + (0 if gb is None else gb * 3)

    x = tw.tensor([1.0, 2.0], dtype=tw.float64, requires_grad=True)
    a, _ = Pair.apply(x)
    a.sum().backward()
    assert seen == [(False, True)]
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
