"""``tw.func.jacrev``, ``jacfwd`` and ``hessian`` against ``torch.func``: layouts for tree
inputs and outputs and tuple argnums, has_aux, nesting, PyTorch's errors; Jacobians also
checked by finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from func_twins import (
    arrays,
    assert_tree_like,
    finite_gradient,
    like_torch,
    raises_like_torch,
)


def _f(x, y):
    return (x.sin() * y.sum()).cumsum(0)


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobian_layouts(backend, name):
    x, y = arrays((3,), (2, 2))
    like_torch(lambda m: getattr(m.func, name)(_f), x, y)
    like_torch(lambda m: getattr(m.func, name)(_f, argnums=1), x, y)
    like_torch(lambda m: getattr(m.func, name)(_f, argnums=(1, 0)), x, y)
    # a matrix input and a scalar output
    like_torch(lambda m: getattr(m.func, name)(lambda y: (y @ y).trace()), y)


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobian_dtypes(backend, name):
    # reverse mode gives the input's dtype, forward mode the output's
    (x,) = arrays((3,))
    like_torch(lambda m: getattr(m.func, name)(lambda x: x.float().exp()), x)
    like_torch(lambda m: getattr(m.func, name)(lambda x: (x * 2).float().sum()), x)
    like_torch(lambda m: m.func.jacfwd(lambda x: x.long()), x)
    like_torch(lambda m: m.func.hessian(lambda x: x.float().square().sum()), x)


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobian_of_trees_with_aux(backend, name):
    w, b, x = arrays((2, 3), (2,), (3,))

    def build(m):
        def f(params, x):
            h = params["w"] @ x + params["b"]
            return {"h": h.tanh(), "n": [h.square().sum()]}, h.detach()

        jac = getattr(m.func, name)(f, has_aux=True)
        return lambda w, b, x: jac({"w": w, "b": b}, x)

    like_torch(build, w, b, x)


def test_jacrev_matches_finite_differences(backend):
    (x,) = arrays((2, 2), seed=2)

    def f(a):
        return (a @ a.T).exp().flatten()

    ours = np.asarray(tw.func.jacrev(f)(tw.tensor(x)))
    for i in range(4):
        row = finite_gradient(lambda a, i=i: float(f(tw.tensor(a))[i].item()), x)
        np.testing.assert_allclose(ours[i], row, rtol=1e-6, atol=1e-8)


def test_hessians(backend):
    x, y = arrays((3,), (3,))
    f = lambda x, y: (x.sin() * y.exp() * x.square()).sum()  # noqa: E731
    like_torch(lambda m: m.func.hessian(f), x, y)
    like_torch(lambda m: m.func.hessian(f, argnums=(0, 1)), x, y)
    like_torch(lambda m: m.func.jacrev(m.func.jacrev(f)), x, y)
    like_torch(lambda m: m.func.jacfwd(m.func.jacfwd(f, argnums=1), argnums=0), x, y)


def test_hessian_matches_finite_differences(backend):
    (x,) = arrays((3,), seed=4)
    f = lambda t: (t.sin() * t.roll(1)).sum() ** 2  # noqa: E731
    ours = np.asarray(tw.func.hessian(f)(tw.tensor(x)))
    for i in range(3):
        row = finite_gradient(lambda a, i=i: float(tw.func.grad(f)(tw.tensor(a))[i].item()), x)
        np.testing.assert_allclose(ours[i], row, rtol=1e-6, atol=1e-7)


def test_jacobian_of_vmap_and_vmap_of_jacobian(backend):
    (x,) = arrays((4, 3))
    like_torch(lambda m: m.func.vmap(m.func.jacrev(lambda r: r.sin() * r.sum())), x)
    like_torch(lambda m: m.func.jacrev(m.func.vmap(lambda r: r.exp().sum())), x)


def test_jacobian_keeps_graph_to_outside_tensors(backend):
    x, w = arrays((2,), (2,))

    def build(m):
        def run(x, w):
            w.requires_grad_()
            jac = m.func.jacrev(lambda x: (x * w).exp())(x)
            return jac, m.autograd.grad(jac.sum(), w)

        return run

    like_torch(build, x, w)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.func.jacrev(lambda x: 3.0),
        lambda m: m.func.jacrev(lambda x: x.long()),
        lambda m: m.func.jacfwd(lambda x: [x, 3]),
        lambda m: m.func.jacrev(lambda x: x, argnums=1),
        lambda m: m.func.jacrev(lambda x: x, has_aux=True),
        lambda m: m.func.jacfwd(lambda x: x, argnums=(0, 0)),
        lambda m: m.func.jacrev(lambda x: x, chunk_size=0),
        lambda m: m.func.jacfwd(lambda x: x * m.rand(3, dtype=m.float64)),
        lambda m: lambda x: m.func.jacrev(lambda x: x)(m.complex(x, x)),
    ],
)
def test_jacobian_errors_like_torch(backend, make):
    (x,) = arrays((3,))
    raises_like_torch(make, x)


def test_jacfwd_randomness_allowed_when_asked(backend):
    (x,) = arrays((3,))
    jac = tw.func.jacfwd(lambda x: x * tw.rand(3, dtype=tw.float64), randomness="different")(
        tw.tensor(x)
    )
    assert jac.shape == (3, 3)
    off_diagonal = np.asarray(jac) * (1 - np.eye(3))
    assert not off_diagonal.any()


def test_physics_informed_derivatives(backend):
    # a PINN's residual: per-point gradient and Laplacian of a small network u(x) through
    # functional_call, vmapped over the collocation points
    (points,) = arrays((4, 2))
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 5), torch.nn.Tanh(), torch.nn.Linear(5, 1))
    theirs = theirs.double()
    ours = tw.nn.Sequential(tw.nn.Linear(2, 5), tw.nn.Tanh(), tw.nn.Linear(5, 1))
    ours.load_state_dict({k: tw.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})

    def build(m, model):
        params = dict(model.named_parameters())

        def u(p, x):
            return m.func.functional_call(model, p, (x,)).squeeze()

        def residual(p, x):
            laplacian = m.func.hessian(u, argnums=1)(p, x).diagonal().sum()
            return laplacian + m.func.jacrev(u, argnums=1)(p, x).square().sum()

        per_point = m.func.vmap(residual, in_dims=(None, 0))
        return lambda x: m.func.grad(lambda p: per_point(p, x).square().mean())(params)

    assert_tree_like(build(tw, ours)(tw.tensor(points)), build(torch, theirs)(torch.tensor(points)))
