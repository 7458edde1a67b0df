"""``tw.func.grad`` and ``grad_and_value`` against ``torch.func``: argnums, has_aux, trees,
nesting, closures over tensors requiring grad, and PyTorch's errors; derivatives also
checked by finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from func_twins import arrays, assert_tree_like, finite_gradient, like_torch, raises_like_torch


def _f(x, y):
    return (x.sin() * y).sum() + (x**3).sum()


def test_grad_single_argument(backend):
    x, y = arrays((3, 2), (3, 2))
    like_torch(lambda m: m.func.grad(_f), x, y)
    like_torch(lambda m: m.func.grad(_f, argnums=1), x, y)
    like_torch(lambda m: m.func.grad(_f, argnums=-1), x, y)


def test_grad_tuple_argnums_and_value(backend):
    x, y = arrays((4,), (4,))
    like_torch(lambda m: m.func.grad(_f, argnums=(0, 1)), x, y)
    like_torch(lambda m: m.func.grad(_f, argnums=(1,)), x, y)
    like_torch(lambda m: m.func.grad_and_value(_f, argnums=(1, 0)), x, y)


def test_grad_has_aux_and_kwargs(backend):
    x, y = arrays((3,), (3,))

    def build(m):
        def f(x, y, *, scale):
            loss = (x * y).sum() * scale
            return loss, {"pred": x * 2, "parts": (y.exp(),)}

        g = m.func.grad_and_value(f, has_aux=True)
        return lambda x, y: g(x, y, scale=3.0)

    like_torch(build, x, y)
    like_torch(lambda m: m.func.grad(lambda x: (x.sum(), x.cos()), has_aux=True), x)


def test_grad_of_trees(backend):
    a, b, c = arrays((2, 3), (3,), (2,))

    def build(m):
        def loss(params, x):
            h = (params["w"] @ params["b"][0]).tanh()
            return (h * x).sum() + params["b"][1].square().sum()

        g = m.func.grad(loss)
        return lambda w, b, x: g({"w": w, "b": [b, x]}, x)

    like_torch(build, a, b, c)


def test_grad_unused_input_is_zero_and_no_graph(backend):
    x, y = arrays((3,), (2,))
    like_torch(lambda m: m.func.grad(lambda x, y: (y * 2).sum(), argnums=(0, 1)), x, y)
    like_torch(lambda m: m.func.grad(lambda x: m.tensor(1.0, dtype=m.float64)), x)


def test_grad_matches_finite_differences(backend):
    (x,) = arrays((2, 3))

    def f(t):
        return ((t.sin() * t).exp().sum() / (1 + t.square().sum())).log()

    ours = tw.func.grad(f)(tw.tensor(x))
    expected = finite_gradient(lambda a: float(f(tw.tensor(a)).item()), x)
    np.testing.assert_allclose(np.asarray(ours), expected, rtol=1e-6, atol=1e-8)


def test_nested_grads(backend):
    (x,) = arrays((1,))

    def build(m):
        f = lambda x: (x.sin() * x**2).sum()  # noqa: E731
        second = m.func.grad(lambda x: m.func.grad(f)(x).sum())
        third = m.func.grad(lambda x: second(x).sum())
        return lambda x: (second(x), third(x))

    like_torch(build, x)
    # a closure over the outer variable: d/dx [d/dy (x*y^2) at y=x] = d/dx 2x^2 = 4x
    like_torch(lambda m: m.func.grad(lambda x: m.func.grad(lambda y: (x * y**2).sum())(x).sum()), x)


def test_nested_grad_checked_by_finite_differences(backend):
    (x,) = arrays((3,), seed=1)
    f = lambda t: (t.sin() * t.exp()).sum()  # noqa: E731
    second = tw.func.grad(lambda t: tw.func.grad(f)(t).sum())
    first_sum = lambda a: float(tw.func.grad(f)(tw.tensor(a)).sum().item())  # noqa: E731
    np.testing.assert_allclose(
        np.asarray(second(tw.tensor(x))), finite_gradient(first_sum, x), rtol=1e-6, atol=1e-8
    )


def test_grad_keeps_graph_to_outside_tensors(backend):
    # torch.func.grad composes with autograd: a closure over w (or an input requiring
    # grad) leaves the gradient attached to w's graph.
    (x, w) = arrays((3,), (3,))

    def build(m, requires):
        def run(x, w):
            w.requires_grad_(requires)
            g = m.func.grad(lambda x: (w * x.sin()).sum())(x)
            if not requires:
                return g
            (dw,) = m.autograd.grad(g.sum(), w)
            return g, dw

        return run

    like_torch(lambda m: build(m, True), x, w)
    like_torch(lambda m: build(m, False), x, w)


def test_grad_under_no_grad(backend):
    (x,) = arrays((3,))

    def build(m):
        def run(x):
            with m.no_grad():
                return m.func.grad_and_value(lambda x: x.square().sum())(x)

        return run

    like_torch(build, x)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.func.grad(lambda x: x * 2),  # not a scalar
        lambda m: m.func.grad(lambda x: 3.0),  # not a tensor
        lambda m: m.func.grad(lambda x: x.sum(), has_aux=True),  # no (output, aux)
        lambda m: m.func.grad(lambda x: (x.sum(), 3), has_aux=True),  # aux not tensors
        lambda m: m.func.grad(lambda x: x.sum(), argnums=2),
        lambda m: m.func.grad(lambda x: x.sum(), argnums=()),
        lambda m: m.func.grad(lambda x: x.sum(), argnums=(0, 0)),
        lambda m: m.func.grad(lambda x: x.sum(), argnums=[0]),
        lambda m: m.func.grad(lambda x: x.sum(), argnums=(0.5,)),
        lambda m: lambda x: m.func.grad(lambda n: x.sum())(3),  # not a tensor
        lambda m: lambda x: m.func.grad(lambda n: n.sum())(x.long()),  # integer
    ],
)
def test_grad_errors_like_torch(backend, make):
    (x,) = arrays((3,))
    raises_like_torch(make, x)


def test_grad_error_names_the_shape(backend):
    (x,) = arrays((2, 2))
    err = raises_like_torch(lambda m: m.func.grad(lambda x: x * 2), x)
    assert "scalar Tensor, got tensor with 2 dims" in str(err)


def test_grad_through_module_closure(backend):
    import torch

    (x,) = arrays((4, 3))
    layer = torch.nn.Linear(3, 2).double()
    ours = tw.nn.Linear(3, 2)
    with tw.no_grad():
        ours.weight.copy_(tw.tensor(layer.weight.detach().numpy()))
        ours.bias.copy_(tw.tensor(layer.bias.detach().numpy()))
    theirs = torch.func.grad(lambda x: layer(x).tanh().sum())(torch.tensor(x))
    got = tw.func.grad(lambda x: ours(x).tanh().sum())(tw.tensor(x))
    assert_tree_like(got, theirs)


def test_grad_leaves_the_callers_graph_usable(backend):
    # y's graph was made before the call; grad under no_grad must not release it
    x, w = arrays((3,), (3,))

    def build(m):
        def run(x, w):
            w.requires_grad_()
            y = w.exp()
            with m.no_grad():
                g = m.func.grad(lambda x: (x * y).sum())(x)
            return g, m.autograd.grad(y.sum(), w)

        return run

    like_torch(build, x, w)
