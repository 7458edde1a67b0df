"""Indexing: basic and advanced ``__getitem__`` and ``__setitem__`` against NumPy (which has
the same semantics for positive steps) and PyTorch, with gradients by finite differences;
``gather``, ``scatter``, ``scatter_add``, ``index_select``, ``index_add``,
``take_along_dim``, ``masked_fill`` and ``nonzero``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck
from hypothesis import given
from hypothesis.extra.numpy import basic_indices
from tensor_reference import HYPOTHESIS, assert_values, like_torch, uniform


def ix(m, values):
    """``values`` as an index array of module ``m``: NumPy, tensorweaver or torch."""
    return np.array(values) if m is np else m.tensor(values)


# name: index expression built for a module (NumPy, tensorweaver or torch), into (3, 4, 5)
INDEXES = {
    "int": lambda m: 1,
    "negative-int": lambda m: -1,
    "ints": lambda m: (0, 2),
    "negative-ints": lambda m: (-1, -2, -3),
    "all-ints-0d": lambda m: (2, 3, 4),
    "slice": lambda m: slice(1, 3),
    "slice-step": lambda m: slice(None, None, 2),
    "slices": lambda m: (slice(1, None, 2), slice(None, 3)),
    "slice-negative-bounds": lambda m: (slice(-2, None), 0),
    "slice-out-of-range": lambda m: slice(-10, 10),
    "slice-empty": lambda m: (slice(None), slice(3, 1)),
    "none": lambda m: None,
    "none-int": lambda m: (None, 1, None),
    "ellipsis": lambda m: Ellipsis,
    "ellipsis-int": lambda m: (Ellipsis, 2),
    "int-ellipsis-none": lambda m: (1, Ellipsis, None),
    "list": lambda m: [0, 2],
    "list-negative": lambda m: [-1, 0, -1],
    "tensor-duplicates": lambda m: ix(m, [2, 0, 2, 2]),
    "tensor-2d": lambda m: ix(m, [[0, 1], [2, 0]]),
    "tensor-0d": lambda m: ix(m, 1),
    "tensor-empty": lambda m: ix(m, np.zeros(0, dtype=np.int64)),
    "two-tensors": lambda m: (ix(m, [0, 2, 1]), ix(m, [3, 3, 0])),
    "broadcast-tensors": lambda m: (ix(m, [[0], [2]]), ix(m, [1, 3, 0])),
    "slice-then-tensor": lambda m: (slice(None), ix(m, [3, 1])),
    "separated-tensors": lambda m: (ix(m, [0, 2]), slice(1, 3), ix(m, [4, 0])),
    "ellipsis-tensor": lambda m: (Ellipsis, ix(m, [1, 1, 4])),
    "int-and-tensor": lambda m: (1, ix(m, [0, 3])),
    "mask-first-dim": lambda m: ix(m, [True, False, True]),
    "mask-two-dims": lambda m: ix(m, [[True, False, False, True]] * 3),
    "mask-then-slice": lambda m: (ix(m, [False, True, True]), slice(None, 2)),
    "slice-then-mask": lambda m: (slice(None), ix(m, [True, False, True, False])),
    "mask-all-false": lambda m: ix(m, [False, False, False]),
}
CUNUMERIC_INDEXES = ("ints", "slices", "none-int", "tensor-duplicates", "separated-tensors")


def index_params():
    for name in INDEXES:
        marks = pytest.mark.cunumeric if name in CUNUMERIC_INDEXES else ()
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(index_params()))
def test_getitem(backend, name):
    index = INDEXES[name]
    x = uniform((3, 4, 5))
    assert_values(tw.tensor(x)[index(tw)], x[index(np)], dtype="float64")
    like_torch(lambda m, t: t[index(m)], x)
    gradcheck(lambda t: t[index(tw)], x)


@pytest.mark.parametrize(
    "name", ["slices", "tensor-duplicates", "separated-tensors", "mask-two-dims"]
)
def test_getitem_of_a_non_contiguous_view(backend, name):
    index = INDEXES[name]
    x = uniform((5, 4, 3))
    assert_values(tw.tensor(x).permute(2, 1, 0)[index(tw)], x.transpose(2, 1, 0)[index(np)])
    gradcheck(lambda t: t.permute(2, 1, 0)[index(tw)], x)


def test_getitem_with_a_mask_computed_from_the_tensor(backend):
    x = uniform((3, 4))
    assert_values(tw.tensor(x)[tw.tensor(x) > 0], x[x > 0])
    gradcheck(lambda t: t[t > 0] * 2, x)
    like_torch(lambda m, t: t[t.abs() > 1], x)


def test_getitem_of_0d_and_empty(backend):
    like_torch(lambda m, t: t[None], np.array(1.5))
    like_torch(lambda m, t: t[...], np.array(1.5))
    like_torch(lambda m, t: t[1:], np.zeros((0, 2)))
    like_torch(lambda m, t: t[:, 1], np.zeros((0, 2)))


@pytest.mark.parametrize("value", [1.5, -1.5])
def test_0d_mask_selects_all_or_nothing(backend, value):
    like_torch(lambda m, t: t[t > 0], np.array(value))


@given(index=basic_indices((3, 4, 5), allow_newaxis=True, allow_ellipsis=True))
@HYPOTHESIS
def test_basic_indexing_any_index(backend, index):
    # PyTorch has no negative slice steps; positive steps index exactly as NumPy does.
    parts = index if isinstance(index, tuple) else (index,)
    if any(isinstance(p, slice) and p.step is not None and p.step < 0 for p in parts):
        return
    x = uniform((3, 4, 5))
    assert_values(tw.tensor(x)[index], x[index])
    gradcheck(lambda t: t[index], x)


# name: (index expression for a module, shape of the values written, or () for a scalar)
SETITEMS = {
    "int": (lambda m: 1, (4,)),
    "int-scalar": (lambda m: (0, 2), ()),
    "slice-broadcast": (lambda m: (slice(None), slice(1, 3)), (1, 2)),
    "ellipsis": (lambda m: (Ellipsis, 0), ()),
    "list": (lambda m: [0, 2], (2, 4)),
    "tensor": (lambda m: ix(m, [2, 0]), (4,)),
    "two-tensors": (lambda m: (ix(m, [0, 2, 1]), ix(m, [3, 0, 0])), (3,)),
    "mask-rows": (lambda m: ix(m, [True, False, True]), (1, 4)),
    "mask-elements": (lambda m: ix(m, [[True, False, False, True]] * 3), ()),
    "negative": (lambda m: (-1, slice(-2, None)), (2,)),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("name", SETITEMS.keys())
def test_setitem(backend, name):
    index, value_shape = SETITEMS[name]
    x, v = uniform((3, 4)), uniform(value_shape, seed=1)
    expected = x.copy()
    expected[index(np)] = v
    t = tw.tensor(x)
    t[index(tw)] = tw.tensor(v)
    assert_values(t, expected)

    def write(m, target, values):
        target[index(m)] = values
        return target

    like_torch(write, x, v)
    like_torch(write, x, float(v.flat[0]))


@pytest.mark.parametrize("name", SETITEMS.keys())
def test_setitem_gradients(backend, name):
    # Overwritten elements of the target get no gradient; the values get theirs.
    index, value_shape = SETITEMS[name]

    def write(target, values):
        out = target * 1
        out[index(tw)] = values * 2
        return out

    gradcheck(write, uniform((3, 4)), uniform(value_shape, seed=1))


def test_setitem_updates_the_tensor_itself(backend):
    x = tw.zeros(2, 3)
    y = x
    x[0, 1] = 4.0
    assert y is x
    assert_values(x, [[0.0, 4.0, 0.0], [0.0, 0.0, 0.0]])


X = uniform((3, 4), seed=2)
ROWS = np.array([[2, 0, 1, 1], [0, 0, 2, 1]])  # along dim 0, with duplicates
COLS = np.array([[3, 0], [1, 1], [0, 2]])  # along dim 1, with duplicates
DISTINCT_COLS = np.array([[3, 0], [1, 2], [0, 2]])


def take_along(x, index, axis):
    return np.take_along_axis(x, index, axis)


def scatter_reference(x, axis, index, src, accumulate):
    out = x.copy()
    for position in np.ndindex(index.shape):
        target = list(position)
        target[axis] = index[position]
        if accumulate:
            out[tuple(target)] += src[position]
        else:
            out[tuple(target)] = src[position]
    return out


@pytest.mark.cunumeric
@pytest.mark.parametrize("dim, index", [(0, ROWS), (1, COLS), (-1, COLS)], ids=["0", "1", "-1"])
def test_gather(backend, dim, index):
    t = tw.tensor(X)
    assert_values(t.gather(dim, tw.tensor(index)), take_along(X, index, dim))
    assert_values(tw.gather(t, dim, tw.tensor(index)), take_along(X, index, dim))
    like_torch(lambda m, x, i: x.gather(dim, i), X, index)
    gradcheck(lambda x: x.gather(dim, tw.tensor(index)), X)


@pytest.mark.parametrize(
    "dim, index",
    [(0, ROWS), (1, COLS), (-1, COLS), (1, COLS[:1])],
    ids=["0", "1", "-1", "broadcast"],
)
def test_take_along_dim(backend, dim, index):
    # Unlike gather, the other dims broadcast.
    shape = list(X.shape)
    shape[dim] = index.shape[dim]
    expected = take_along(X, np.broadcast_to(index, shape), dim)
    assert_values(tw.tensor(X).take_along_dim(tw.tensor(index), dim), expected)
    like_torch(lambda m, x, i: m.take_along_dim(x, i, dim=dim), X, index)
    gradcheck(lambda x: tw.take_along_dim(x, tw.tensor(index), dim), X)


@pytest.mark.parametrize("dim", [1, -1])
def test_scatter(backend, dim):
    src = uniform(DISTINCT_COLS.shape, seed=3)
    expected = scatter_reference(X, 1, DISTINCT_COLS, src, accumulate=False)
    result = tw.tensor(X).scatter(dim, tw.tensor(DISTINCT_COLS), tw.tensor(src))
    assert_values(result, expected)
    like_torch(lambda m, x, i, s: x.scatter(dim, i, s), X, DISTINCT_COLS, src)
    gradcheck(lambda x, s: x.scatter(dim, tw.tensor(DISTINCT_COLS), s), X, src)


@pytest.mark.cunumeric
@pytest.mark.parametrize("dim, index", [(0, ROWS), (1, COLS), (-1, COLS)], ids=["0", "1", "-1"])
def test_scatter_add_accumulates_duplicates(backend, dim, index):
    src = uniform(index.shape, seed=4)
    expected = scatter_reference(X, dim % 2, index, src, accumulate=True)
    assert_values(tw.tensor(X).scatter_add(dim, tw.tensor(index), tw.tensor(src)), expected)
    like_torch(lambda m, x, i, s: m.scatter_add(x, dim, i, s), X, index, src)
    gradcheck(lambda x, s: x.scatter_add(dim, tw.tensor(index), s), X, src)


INDEX = np.array([2, 0, 2, 1, 2])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(backend, dim):
    index = INDEX % X.shape[dim]
    assert_values(tw.tensor(X).index_select(dim, tw.tensor(index)), np.take(X, index, dim))
    like_torch(lambda m, x, i: m.index_select(x, dim, i), X, index)
    gradcheck(lambda x: x.index_select(dim, tw.tensor(index)), X)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_add_accumulates_duplicates(backend, dim):
    index = INDEX % X.shape[dim]
    source_shape = list(X.shape)
    source_shape[dim] = len(index)
    source = uniform(source_shape, seed=5)
    expected = X.copy()
    for k, i in enumerate(index):
        target = [slice(None)] * 2
        target[dim] = i
        expected[tuple(target)] += np.take(source, k, dim)
    result = tw.tensor(X).index_add(dim, tw.tensor(index), tw.tensor(source))
    assert_values(result, expected)
    like_torch(lambda m, x, i, s: x.index_add(dim, i, s), X, index, source)
    gradcheck(lambda x, s: x.index_add(dim, tw.tensor(index), s), X, source)


@pytest.mark.parametrize(
    "mask_shape", [(3, 4), (1, 4), (3, 1), ()], ids=["full", "row", "column", "0d"]
)
def test_masked_fill(backend, mask_shape):
    mask = np.asarray(uniform(mask_shape, seed=6) > 0)
    assert_values(tw.tensor(X).masked_fill(tw.tensor(mask), -7.5), np.where(mask, -7.5, X))
    like_torch(lambda m, x, k: x.masked_fill(k, 2), X, mask)
    like_torch(lambda m, x, k: x.masked_fill(k, 2.5), X.astype(np.int64), mask)
    gradcheck(lambda x: x.masked_fill(tw.tensor(mask), 0.5), X)


@pytest.mark.parametrize(
    "values",
    [X > 0, np.where(X > 0, X, 0.0), np.zeros((2, 0)), np.array(3.0), np.array(False)],
    ids=["bool", "float", "empty", "0d", "0d-false"],
)
def test_nonzero(backend, values):
    result = like_torch(lambda m, t: t.nonzero(), values)
    assert_values(result, np.argwhere(values), dtype="int64")


# A list holding lists, slices, None, Ellipsis or tensors indexes as a tuple of its items, as
# PyTorch (with its deprecation warning): x[[[0, 1], [1, 0]]] gave a (2, 2, 3, 4, 5) gather
# here where PyTorch gives x[[0, 1], [1, 0]], and x[[slice(None), 1]] raised.
@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize(
    "index",
    [
        [[0, 1], [1, 0]],
        [[0, 1]],
        [0, [1, 0]],
        [slice(None), 1],
        [None, 0],
        [Ellipsis, 1],
        [[0], [1], [2]],
        [0, 1],
        [True, False],
    ],
    ids=str,
)
def test_a_list_of_sequences_indexes_as_a_tuple_like_torch(backend: str, index: list) -> None:
    x = np.arange(120.0).reshape(2, 3, 4, 5)
    like_torch(lambda m, t: t[index], x)

    def write(m: Any, t: Any) -> Any:
        t = t.clone()
        t[index] = -1.0
        return t

    like_torch(write, x)
