"""``tw.func.vjp``, ``jvp`` and ``linearize`` against ``torch.func``: trees of primals and
outputs, has_aux, repeated vjp_fn calls, composition with grad, PyTorch's errors; jvp is
also checked by finite differences (it is computed by the double-vjp trick)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from func_twins import arrays, like_torch, raises_like_torch


def _two_outputs(x, y):
    return {"a": x.sin() * y, "b": (x @ y.T,)}


def test_vjp_tree_output_and_repeated_calls(backend):
    x, y, ca, cb, ca2 = arrays((2, 3), (2, 3), (2, 3), (2, 2), (2, 3))

    def build(m):
        def run(x, y, ca, cb, ca2):
            out, fn = m.func.vjp(_two_outputs, x, y)
            return out, fn({"a": ca, "b": (cb,)}), fn({"a": ca2, "b": (cb * 0,)})

        return run

    like_torch(build, x, y, ca, cb, ca2)


def test_vjp_has_aux_and_tree_primals(backend):
    w, b, c = arrays((3,), (3,), (3,))

    def build(m):
        def run(w, b, c):
            f = lambda p: ((p["w"] * p["b"]).exp(), p["w"].sum())  # noqa: E731
            out, fn, aux = m.func.vjp(f, {"w": w, "b": b}, has_aux=True)
            return out, fn(c), aux

        return run

    like_torch(build, w, b, c)


def test_vjp_differentiable_in_cotangent(backend):
    x, v = arrays((3,), (3,))

    def build(m):
        def g(v, x):
            _, fn = m.func.vjp(lambda x: x.sin() * x, x)
            return (fn(v)[0] ** 2).sum()

        return m.func.grad(g, argnums=(0, 1))

    like_torch(build, v, x)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: lambda x: m.func.vjp(lambda x: x.long(), x),
        lambda m: lambda x: m.func.vjp(lambda x: 3.0, x),
        lambda m: lambda x: m.func.vjp(lambda x: x, x, has_aux=True),
        lambda m: lambda x: m.func.vjp(lambda x: (x, x), x)[1](x),
        lambda m: lambda x: m.func.vjp(lambda x: x, 2.0),
    ],
)
def test_vjp_errors_like_torch(backend, make):
    (x,) = arrays((3,))
    raises_like_torch(make, x)


def test_jvp_values_trees_and_aux(backend):
    x, y, tx, ty = arrays((2, 3), (2, 3), (2, 3), (2, 3))
    like_torch(
        lambda m: lambda x, y, tx, ty: m.func.jvp(_two_outputs, (x, y), (tx, ty)), x, y, tx, ty
    )

    def build(m):
        def run(x, y, tx, ty):
            f = lambda p: ((p[0] * p[1]).tanh(), [p[0] + 1])  # noqa: E731
            return m.func.jvp(f, ([x, y],), ([tx, ty],), has_aux=True)

        return run

    like_torch(build, x, y, tx, ty)


def test_jvp_of_independent_output(backend):
    x, t = arrays((3,), (3,))
    like_torch(
        lambda m: lambda x, t: m.func.jvp(lambda x: m.ones(2, dtype=m.float64), (x,), (t,)), x, t
    )
    raises_like_torch(
        lambda m: lambda x, t: m.func.jvp(lambda x: x.detach() * 2, (x,), (t,), strict=True), x, t
    )


def test_jvp_matches_finite_differences(backend):
    x, t = arrays((4,), (4,), seed=3)

    def f(a):
        return (a.exp() * a.roll(1)).cumsum(0)

    _, ours = tw.func.jvp(f, (tw.tensor(x),), (tw.tensor(t),))
    eps = 1e-6
    fd = (np.asarray(f(tw.tensor(x + eps * t))) - np.asarray(f(tw.tensor(x - eps * t)))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(ours), fd, rtol=1e-6, atol=1e-8)


def test_jvp_composes_with_grad(backend):
    x, t = arrays((3,), (3,))

    def build(m):
        # a Hessian-vector product: forward over reverse
        f = lambda x: (x.sin() * x.square()).sum()  # noqa: E731
        return lambda x, t: m.func.jvp(m.func.grad(f), (x,), (t,))

    like_torch(build, x, t)
    like_torch(
        lambda m: m.func.grad(lambda x, t: m.func.jvp(lambda x: x.exp(), (x,), (t,))[1].sum()),
        x,
        t,
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda m: lambda x: m.func.jvp(lambda x: x, [x], [x]),
        lambda m: lambda x: m.func.jvp(lambda x: x, (x,), (x, x)),
        lambda m: lambda x: m.func.jvp(lambda x: x, (x,), (x[:2],)),
        lambda m: lambda x: m.func.jvp(lambda x: 3, (x,), (x,)),
        lambda m: lambda x: m.func.jvp(lambda x: x, (), ()),
        lambda m: lambda x: m.func.jvp(lambda x: x, (x,), (x,), has_aux=True),
    ],
)
def test_jvp_errors_like_torch(backend, make):
    (x,) = arrays((3,))
    raises_like_torch(make, x)


def test_linearize(backend):
    x, t1, t2 = arrays((3,), (3,), (3,))

    def build(m):
        def run(x, t1, t2):
            out, fn = m.func.linearize(lambda x: x.sin() * x.exp(), x)
            return out, fn(t1), fn(t2)

        return run

    like_torch(build, x, t1, t2)


def test_jvp_and_linearize_of_integer_outputs_give_zero_tangents_like_torch() -> None:
    # They raised "only Tensors of floating point and complex dtype can require gradients"
    x_host = [0.5, -1.0, 2.0]
    f = lambda lib: lambda x: (x.sin(), x.argmax())  # noqa: E731
    (theirs, their_tangents) = torch.func.jvp(f(torch), (torch.tensor(x_host),), (torch.ones(3),))
    (ours, our_tangents) = tw.func.jvp(f(tw), (tw.tensor(x_host),), (tw.ones(3),))
    assert our_tangents[1].dtype is tw.int64 and our_tangents[1].item() == 0
    assert their_tangents[1].item() == 0 and ours[1].item() == theirs[1].item()
    _, push = tw.func.linearize(lambda x: x.round().long(), tw.tensor(x_host))
    assert push(tw.ones(3)).tolist() == [0, 0, 0]
