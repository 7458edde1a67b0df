"""Shape and movement ops: results equal PyTorch's (float64 data moves exactly) and NumPy's
where NumPy has the same op; gradients by finite differences; negative dims, 0-d and empty
inputs; ``cat``/``stack``/``split``/``chunk``/``unbind`` across tensors.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes
from tensor_reference import (
    HYPOTHESIS,
    assert_values,
    like_torch,
    raises_like_torch,
    uniform,
)

# name: (input shape, call on tensors of either library, NumPy reference or None)
OPS = {
    "reshape": ((2, 3, 4), lambda m, x: x.reshape(4, 6), lambda x: x.reshape(4, 6)),
    "reshape-tuple": ((2, 3, 4), lambda m, x: x.reshape((3, 8)), lambda x: x.reshape(3, 8)),
    "reshape-minus-1": ((2, 3, 4), lambda m, x: m.reshape(x, (-1, 4)), lambda x: x.reshape(-1, 4)),
    "view": ((2, 3, 4), lambda m, x: x.view(6, -1), lambda x: x.reshape(6, -1)),
    "permute": ((2, 3, 4), lambda m, x: x.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1)),
    "permute-negative": (
        (2, 3, 4),
        lambda m, x: m.permute(x, (-1, 0, -2)),
        lambda x: x.transpose(2, 0, 1),
    ),
    "transpose": ((2, 3, 4), lambda m, x: x.transpose(0, 2), lambda x: x.swapaxes(0, 2)),
    "transpose-negative": (
        (2, 3, 4),
        lambda m, x: m.transpose(x, -1, -2),
        lambda x: x.swapaxes(-1, -2),
    ),
    "T": ((3, 4), lambda m, x: x.T, lambda x: x.T),
    "mT": ((2, 3, 4), lambda m, x: x.mT, lambda x: x.mT),
    "flatten": ((2, 3, 4), lambda m, x: x.flatten(), lambda x: x.reshape(-1)),
    "flatten-start": ((2, 3, 4), lambda m, x: x.flatten(1), lambda x: x.reshape(2, 12)),
    "flatten-range": ((2, 3, 4), lambda m, x: m.flatten(x, 0, 1), lambda x: x.reshape(6, 4)),
    "flatten-negative": ((2, 3, 4), lambda m, x: x.flatten(-2, -1), lambda x: x.reshape(2, 12)),
    "unflatten": (
        (2, 3, 4),
        lambda m, x: x.unflatten(2, (2, 2)),
        lambda x: x.reshape(2, 3, 2, 2),
    ),
    "unflatten-negative": (
        (2, 3, 4),
        lambda m, x: x.unflatten(-1, (2, -1)),
        lambda x: x.reshape(2, 3, 2, 2),
    ),
    "squeeze": ((2, 1, 3, 1), lambda m, x: x.squeeze(), lambda x: x.squeeze()),
    "squeeze-dim": ((2, 1, 3, 1), lambda m, x: m.squeeze(x, 1), lambda x: x.squeeze(1)),
    "squeeze-negative": ((2, 1, 3, 1), lambda m, x: x.squeeze(-1), lambda x: x.squeeze(-1)),
    "squeeze-not-1": ((2, 1, 3, 1), lambda m, x: x.squeeze(0), lambda x: x),
    "unsqueeze": ((2, 3), lambda m, x: x.unsqueeze(0), lambda x: x[None]),
    "unsqueeze-middle": ((2, 3), lambda m, x: m.unsqueeze(x, 1), lambda x: x[:, None]),
    "unsqueeze-negative": ((2, 3), lambda m, x: x.unsqueeze(-1), lambda x: x[..., None]),
    "expand": (
        (3, 1),
        lambda m, x: x.expand(2, 3, 4),
        lambda x: np.broadcast_to(x, (2, 3, 4)),
    ),
    "expand-minus-1": (
        (3, 1),
        lambda m, x: x.expand(-1, 5),
        lambda x: np.broadcast_to(x, (3, 5)),
    ),
    "expand_as": (
        (1, 4),
        lambda m, x: x.expand_as(m.zeros(3, 4)),
        lambda x: np.broadcast_to(x, (3, 4)),
    ),
    "repeat": ((2, 3), lambda m, x: x.repeat(2, 1), lambda x: np.tile(x, (2, 1))),
    "repeat-new-dims": ((2, 3), lambda m, x: x.repeat(2, 1, 3), lambda x: np.tile(x, (2, 1, 3))),
    "contiguous": ((3, 4), lambda m, x: x.mT.contiguous(), lambda x: x.T),
    "narrow": ((3, 5), lambda m, x: x.narrow(1, 1, 3), lambda x: x[:, 1:4]),
    "narrow-negative": ((3, 5), lambda m, x: m.narrow(x, -2, 1, 2), lambda x: x[1:3]),
    "flip": ((2, 3, 4), lambda m, x: x.flip(0), lambda x: np.flip(x, 0)),
    "flip-dims": ((2, 3, 4), lambda m, x: m.flip(x, (0, -1)), lambda x: np.flip(x, (0, 2))),
    "roll": ((3, 4), lambda m, x: x.roll(1, 0), lambda x: np.roll(x, 1, 0)),
    "roll-dims": (
        (3, 4),
        lambda m, x: m.roll(x, (1, -3), (0, -1)),
        lambda x: np.roll(x, (1, -3), (0, 1)),
    ),
    "roll-flat": ((3, 4), lambda m, x: x.roll(5), lambda x: np.roll(x, 5)),
    "tril": ((4, 5), lambda m, x: x.tril(), np.tril),
    "tril-diagonal": ((4, 5), lambda m, x: m.tril(x, 1), lambda x: np.tril(x, 1)),
    "tril-batched": ((2, 3, 3), lambda m, x: x.tril(-1), lambda x: np.tril(x, -1)),
    "triu": ((4, 5), lambda m, x: x.triu(), np.triu),
    "triu-diagonal": ((5, 4), lambda m, x: m.triu(x, -2), lambda x: np.triu(x, -2)),
    "cat": (
        (2, 3),
        lambda m, x: m.cat([x, x * 2, x[:1]], dim=0),
        lambda x: np.concatenate([x, x * 2, x[:1]]),
    ),
    "cat-negative": (
        (2, 3),
        lambda m, x: m.cat((x, x.flip(1)), -1),
        lambda x: np.concatenate([x, x[:, ::-1]], -1),
    ),
    "cat-with-empty": (
        (2, 3),
        lambda m, x: m.cat([x, x[:, :0], x], dim=1),
        lambda x: np.concatenate([x, x], 1),
    ),
    "stack": ((2, 3), lambda m, x: m.stack([x, x + 1]), lambda x: np.stack([x, x + 1])),
    "stack-last": (
        (2, 3),
        lambda m, x: m.stack((x, x * x), dim=-1),
        lambda x: np.stack([x, x * x], -1),
    ),
    "stack-middle": (
        (2, 3),
        lambda m, x: m.stack([x, -x, x], 1),
        lambda x: np.stack([x, -x, x], 1),
    ),
    # 0-d and empty inputs
    "reshape-0d": ((), lambda m, x: x.reshape(1, 1), lambda x: x.reshape(1, 1)),
    "reshape-to-0d": ((1,), lambda m, x: x.reshape(()), lambda x: x.reshape(())),
    "flatten-0d": ((), lambda m, x: x.flatten(), lambda x: x.reshape(1)),
    "unsqueeze-0d": ((), lambda m, x: x.unsqueeze(0), lambda x: x[None]),
    "squeeze-0d": ((), lambda m, x: x.squeeze(), lambda x: x),
    "expand-0d": ((), lambda m, x: x.expand(2, 3), lambda x: np.broadcast_to(x, (2, 3))),
    "permute-0d": ((), lambda m, x: m.permute(x, ()), lambda x: x),
    "stack-0d": ((), lambda m, x: m.stack([x, x * 2]), lambda x: np.stack([x, x * 2])),
    "reshape-empty": ((0, 3), lambda m, x: x.reshape(3, 0), lambda x: x.reshape(3, 0)),
    "transpose-empty": ((0, 3), lambda m, x: x.transpose(0, 1), lambda x: x.T),
    "flatten-empty": ((2, 0, 3), lambda m, x: x.flatten(1), lambda x: x.reshape(2, 0)),
    "cat-empty": ((0, 3), lambda m, x: m.cat([x, x]), lambda x: np.concatenate([x, x])),
}
CUNUMERIC_OPS = ("reshape", "permute", "expand", "cat", "stack", "flip", "tril", "narrow")


def shape_params():
    for name in OPS:
        marks = pytest.mark.cunumeric if name in CUNUMERIC_OPS else ()
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(shape_params()))
def test_shape_op_values(backend, name):
    shape, fn, reference = OPS[name]
    x = uniform(shape)
    result = like_torch(fn, x)
    assert_values(result, reference(x), dtype="float64")
    like_torch(fn, np.asarray(x * 10, dtype=np.int32))


@pytest.mark.parametrize("name", list(shape_params()))
def test_shape_op_gradients(backend, name):
    shape, fn, _ = OPS[name]
    gradcheck(lambda t: fn(tw, t), uniform(shape, seed=1))


# name: (input shape, call returning a sequence of tensors)
SPLITS = {
    "split-size": ((2, 3, 5), lambda m, x: x.split(2, dim=2)),
    "split-sections": ((2, 3, 5), lambda m, x: x.split([1, 4], dim=-1)),
    "split-function": ((4, 3), lambda m, x: m.split(x, 3)),
    "split-function-sections": ((4, 3), lambda m, x: m.split(x, [2, 0, 1], 1)),
    "chunk": ((2, 3, 5), lambda m, x: x.chunk(2, dim=1)),
    "chunk-uneven": ((7, 2), lambda m, x: m.chunk(x, 3)),
    "chunk-negative": ((2, 6), lambda m, x: x.chunk(4, -1)),
    "unbind": ((2, 3, 4), lambda m, x: x.unbind(1)),
    "unbind-negative": ((2, 3), lambda m, x: m.unbind(x, -1)),
    "unbind-first": ((3, 2), lambda m, x: x.unbind()),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("name", SPLITS.keys())
def test_splitting(backend, name):
    shape, fn = SPLITS[name]
    x = uniform(shape)
    like_torch(fn, x)
    gradcheck(lambda t: tw.cat([p.reshape(-1) for p in fn(tw, t)]), x)


def test_only_some_split_parts_used(backend):
    # Parts that do not reach the loss get no gradient: zeros in their place.
    x = uniform((6, 2))
    gradcheck(lambda t: t.split(2)[1] * 3, x)
    gradcheck(lambda t: t.unbind(0)[4], x)


def test_contiguous_keeps_values_of_views(backend):
    x = uniform((3, 8))
    assert_values(tw.tensor(x)[:, ::3].mT.contiguous(), x[:, ::3].T)


def test_size_of_every_dim_after_permute(backend):
    t = tw.zeros(2, 3, 4).permute(1, 2, 0)
    assert t.shape == (3, 4, 2) and t.size(-1) == 2 and t.size(0) == 3


@st.composite
def shape_and_permutation(draw):
    shape = draw(array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=3))
    perm = draw(st.permutations(range(len(shape))))
    flips = draw(st.lists(st.sampled_from(range(len(shape))), unique=True))
    return shape, tuple(perm), tuple(flips)


@given(case=shape_and_permutation())
@HYPOTHESIS
def test_permute_flip_reshape_any_shapes(backend, case):
    shape, perm, flips = case

    def move(x, m):
        out = m.permute(x, perm) if m is tw else x.transpose(perm)
        if flips:
            out = out.flip(flips) if m is tw else np.flip(out, flips)
        return out.reshape(-1, shape[perm[0]])

    x = uniform(shape)
    assert_values(move(tw.tensor(x), tw), move(x, np))
    gradcheck(lambda t: move(t, tw), x)


@pytest.mark.parametrize(
    ("start", "length"),
    [(3, 4), (6, 1), (-6, 1), (2, -1), (0, 6)],
    ids=["past-the-end", "start-high", "start-low", "negative-length", "too-long"],
)
def test_narrow_errors_are_pytorchs(backend: str, start: int, length: int) -> None:
    # A start outside [-size, size] is an IndexError, a length that does not fit a RuntimeError.
    raises_like_torch(
        lambda m, x: x.narrow(0, start, length), np.arange(5.0), match=["narrow", str(start)]
    )


@pytest.mark.parametrize(("start", "length"), [(5, 0), (-5, 2), (-1, 1)])
def test_narrow_at_the_edges(backend: str, start: int, length: int) -> None:
    like_torch(lambda m, x: x.narrow(0, start, length), np.arange(5.0))


@pytest.mark.parametrize("first", [True, False])
def test_cat_skips_an_empty_1d_tensor_shape_but_not_its_dtype_or_gradient(backend, first):
    # tw.cat left a skipped (0,) tensor out of the promotion and out of the graph: a float64
    # empty beside float32 rows gave float32, and an empty requiring grad got no gradient.
    def run(m):
        empty = m.zeros(0, dtype=m.float64, requires_grad=True)
        rows = m.ones(3, 2, dtype=m.float32, requires_grad=True)
        out = m.cat([empty, rows] if first else [rows, empty], dim=-1 if first else 0)
        out.sum().backward()
        return out, empty.grad, rows.grad

    like_torch(run)
    like_torch(lambda m: m.cat([m.zeros(0, dtype=m.int64), m.zeros(0, dtype=m.float16)]))
    assert like_torch(lambda m: m.cat([m.zeros(0, requires_grad=True)])).requires_grad
