"""``tw.func.vmap`` (and ``tw.vmap``) against ``torch.func.vmap``: in_dims (ints, None,
trees), out_dims, kwargs, nesting, chunk_size, randomness, batch size 0, PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from func_twins import arrays, assert_tree_like, like_torch, raises_like_torch


def test_vmap_alias():
    assert tw.vmap is tw.func.vmap
    assert torch.vmap is torch.func.vmap


def test_in_dims_ints_none_and_negative(backend):
    x, y = arrays((4, 3), (3, 4))
    like_torch(lambda m: m.func.vmap(lambda a: a.sin().sum()), x)
    like_torch(lambda m: m.func.vmap(lambda a, b: a * b, in_dims=(0, 1)), x, y)
    like_torch(lambda m: m.func.vmap(lambda a, b: a @ b, in_dims=(0, None)), x, y)
    like_torch(lambda m: m.func.vmap(lambda a: a.cumsum(0), in_dims=-1), x)


def test_in_dims_trees_kwargs_and_non_tensors(backend):
    w, b, x = arrays((5, 2, 3), (2,), (5, 3))

    def build(m):
        def f(params, x, scale, *, shift):
            return (params["w"] @ x + params["b"][0]) * scale + shift

        v = m.func.vmap(f, in_dims=({"w": 0, "b": [None]}, 0, None))
        return lambda w, b, x: v({"w": w, "b": [b]}, x, 2.0, shift=1.5)

    like_torch(build, w, b, x)


def test_out_dims_and_tree_outputs(backend):
    (x,) = arrays((4, 3))
    like_torch(lambda m: m.func.vmap(lambda a: a * 2, out_dims=1), x)
    like_torch(lambda m: m.func.vmap(lambda a: a.exp(), out_dims=-1), x)
    like_torch(lambda m: m.func.vmap(lambda a: {"s": a.sum(), "p": (a, a.max())}, out_dims=0), x)
    like_torch(
        lambda m: m.func.vmap(lambda a: (m.zeros(2, dtype=m.float64), a), out_dims=(None, 1)), x
    )
    # an output not depending on the input is expanded, a non-tensor passes with None
    like_torch(lambda m: m.func.vmap(lambda a: m.ones(2, dtype=m.float64)), x)
    like_torch(lambda m: m.func.vmap(lambda a: (a, 3), out_dims=(0, None)), x)


def test_nested_vmap_and_chunk_size(backend):
    x, y = arrays((3, 4), (5, 4))

    def build(m):
        dot = lambda a, b: (a * b).sum()  # noqa: E731
        return m.func.vmap(m.func.vmap(dot, in_dims=(None, 0)), in_dims=(0, None))

    like_torch(build, x, y)
    like_torch(lambda m: m.func.vmap(lambda a: a.softmax(0), chunk_size=2), x)


def test_vmap_is_differentiable(backend):
    (x,) = arrays((3, 2))
    like_torch(lambda m: m.func.grad(lambda x: m.func.vmap(lambda r: r.sin().prod())(x).sum()), x)

    def build(m):
        def run(x):
            x.requires_grad_()
            out = m.func.vmap(lambda r: r.exp() * r.sum())(x)
            return out, m.autograd.grad(out.square().sum(), x)

        return run

    like_torch(build, x)


def test_empty_batch(backend):
    (x,) = arrays((0, 3))
    like_torch(lambda m: m.func.vmap(lambda a: a.sum()), x)
    like_torch(lambda m: m.func.vmap(lambda a: (a * 2, a.sum()), out_dims=(1, 0)), x)


def test_randomness(backend):
    (x,) = arrays((4, 3))
    raises_like_torch(lambda m: m.func.vmap(lambda a: a + m.rand(3, dtype=m.float64)), x)
    raises_like_torch(lambda m: m.func.vmap(lambda a: m.nn.functional.dropout(a, 0.5)), x)
    tx = tw.tensor(x)
    same = tw.func.vmap(lambda a: a + tw.rand(3, dtype=tw.float64), randomness="same")(tx)
    noise = np.asarray(same) - x
    np.testing.assert_allclose(noise, np.broadcast_to(noise[0], noise.shape))
    different = tw.func.vmap(lambda a: a + tw.rand(3, dtype=tw.float64), randomness="different")
    noise = np.asarray(different(tx)) - x
    assert len({tuple(r) for r in noise.round(12)}) == 4
    # no random op: nothing to complain about
    like_torch(lambda m: m.func.vmap(lambda a: a * 2, randomness="error"), x)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: lambda x, y: m.func.vmap(lambda a, b: a + b)(x, y),  # sizes 4 and 5
        lambda m: lambda x, y: m.func.vmap(lambda a, b: a, in_dims=(None, None))(x, y),
        lambda m: lambda x, y: m.func.vmap(lambda a, b: a, in_dims=(0,))(x, y),
        lambda m: lambda x, y: m.func.vmap(lambda a, b: a, in_dims=[0, 0])(x, y),
        lambda m: lambda x, y: m.func.vmap(lambda a, b: a, in_dims=(0, 2))(x, y),
        lambda m: lambda x, y: m.func.vmap(lambda a, b: a, in_dims=(0, 0.5))(x, y),
        lambda m: lambda x, y: m.func.vmap(lambda a, n: a)(x, 3),
        lambda m: lambda x, y: m.func.vmap(lambda: x)(),
        lambda m: lambda x, y: m.func.vmap(lambda a: 3)(x),
        lambda m: lambda x, y: m.func.vmap(lambda a: a, out_dims=None)(x),
        lambda m: lambda x, y: m.func.vmap(lambda a: (a, a), out_dims=(0, 0, 0))(x),
        lambda m: lambda x, y: m.func.vmap(lambda a: {"s": a}, out_dims=(0,))(x),
        lambda m: lambda x, y: m.func.vmap(lambda a: a, out_dims="0")(x),
        lambda m: lambda x, y: m.func.vmap(lambda a: a, randomness="maybe")(x),
        lambda m: lambda x, y: m.func.vmap(lambda a: a, chunk_size=0)(x),
    ],
)
def test_errors_like_torch(backend, make):
    x, y = arrays((4, 2), (5, 2))
    err = raises_like_torch(make, x, y)
    assert "vmap" in str(err) or "randomness" in str(err)


def test_error_names_sizes(backend):
    x, y = arrays((4, 2), (5, 2))
    err = raises_like_torch(lambda m: lambda x, y: m.func.vmap(lambda a, b: a + b)(x, y), x, y)
    assert "[4, 5]" in str(err)


def test_tw_vmap_on_tensors_moved_between_backends(backend):
    (x,) = arrays((3, 2))
    got = tw.vmap(lambda r: r.norm())(tw.tensor(x))
    assert_tree_like(got, torch.vmap(lambda r: r.norm())(torch.tensor(x)))
