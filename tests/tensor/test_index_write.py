"""Writes at indices: ``index_copy``, ``index_fill``, ``index_put``, ``masked_scatter`` (out
of place, in place and as ``tw.*`` functions) and ``fill_diagonal_`` against PyTorch: values,
dtypes, negative and out-of-range indices with PyTorch's exception classes, and gradients
by finite differences and against PyTorch's; then the ``new_*`` constructors' keywords.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from gradcheck import gradcheck
from tensor_reference import dtype_name, grads_like_torch, like_torch, raises_like_torch, uniform

X = uniform((3, 4), seed=1)


def _long(m, values):
    return m.tensor(values, dtype=m.int64)


@pytest.mark.cunumeric
@pytest.mark.parametrize("form", ["method", "function", "inplace"])
def test_index_copy_like_torch(backend: str, form: str) -> None:
    source = uniform((3, 2), seed=2)

    def fn(m, x, s):
        index = _long(m, [3, 0])
        if form == "method":
            return x.index_copy(1, index, s)
        if form == "function":
            return m.index_copy(x, 1, index, s)
        out = x.clone()
        assert out.index_copy_(1, index, s) is out
        return out

    like_torch(fn, X, source)


def test_index_copy_of_0d_and_1d_like_torch(backend: str) -> None:
    five = np.array(5.0)
    like_torch(lambda m, x, s: x.index_copy(0, _long(m, [0]), s), np.array(1.0), five)
    like_torch(lambda m, x, s: x.index_copy(0, _long(m, 1), s), np.zeros(3), five)
    like_torch(lambda m, x, s: x.index_copy(0, _long(m, []), s), np.zeros(3), np.zeros(0))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m, x: x.index_copy(0, _long(m, [0, 3]), m.ones(2, 4, dtype=m.float64)), ["3"]),
        (lambda m, x: x.index_copy(0, _long(m, [0, -1]), m.ones(2, 4, dtype=m.float64)), ["-1"]),
        (lambda m, x: x.index_copy(0, _long(m, [[0], [1]]), m.ones(2, 4, dtype=m.float64)), []),
        (lambda m, x: x.index_copy(0, _long(m, [0, 1]), m.ones(3, 4, dtype=m.float64)), []),
        (lambda m, x: x.index_copy(0, _long(m, [0, 1]), m.ones(2, 3, dtype=m.float64)), []),
        (lambda m, x: x.index_copy(0, _long(m, [0, 1]), m.ones(2, 4)), ["float32"]),
        (lambda m, x: x.index_copy(0, m.tensor([0, 1], dtype=m.int32), x[:2]), ["int32"]),
    ],
)
def test_index_copy_errors_like_torch(backend: str, call, match: list) -> None:
    raises_like_torch(call, X, match=match)


@pytest.mark.cunumeric
@pytest.mark.parametrize("value", [2.5, "tensor", 7])
def test_index_fill_counts_negative_indices_from_the_end_like_torch(
    backend: str, value: object
) -> None:
    def fn(m, x):
        v = m.tensor(-1.5, dtype=m.float64) if value == "tensor" else value
        out = x.clone()
        assert out.index_fill_(1, _long(m, [-4, 2]), v) is out
        return x.index_fill(1, _long(m, [-1, 0, -1]), v), m.index_fill(x, 0, _long(m, 1), v), out

    like_torch(fn, X)


def test_index_fill_casts_the_value_like_torch(backend: str) -> None:
    like_torch(lambda m, x: x.index_fill(0, _long(m, [1]), 2.7), np.zeros(3, dtype=np.int64))
    like_torch(
        lambda m, x: x.index_fill(0, _long(m, [1]), m.tensor(2.7)), np.zeros(3, dtype=np.int64)
    )
    like_torch(lambda m, x: x.index_fill(0, _long(m, [0]), 3.0), np.array(1.0))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m, x: x.index_fill(0, _long(m, [0, 3]), 1.0), ["3"]),
        (lambda m, x: x.index_fill(1, _long(m, [-5]), 1.0), ["-5"]),
        (lambda m, x: x.index_fill(0, m.tensor([0], dtype=m.int32), 1.0), ["int64"]),
        (lambda m, x: x.index_fill(0, _long(m, [[0]]), 1.0), []),
        (lambda m, x: x.index_fill(0, _long(m, [0]), m.tensor([1.0])), ["0-d|0-dim"]),
    ],
)
def test_index_fill_errors_like_torch(backend: str, call, match: list) -> None:
    raises_like_torch(call, X, match=match)


@pytest.mark.cunumeric
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_like_torch(backend: str, accumulate: bool) -> None:
    values = uniform((2,), seed=3)

    def fn(m, x, v):
        rows, cols = _long(m, [0, -3]), _long(m, [1, 2])
        out = x.clone()
        assert out.index_put_((rows, cols), v, accumulate) is out
        return x.index_put((rows, cols), v, accumulate=accumulate), out

    like_torch(fn, X, values)
    one = np.array(1.5)
    like_torch(lambda m, x, v: m.index_put(x, [_long(m, [2, 0])], v), X, one)
    like_torch(lambda m, x, v: x.index_put((m.tensor([True, False, True]),), v), X, one)


def test_index_put_accumulate_sums_duplicates_like_torch(backend: str) -> None:
    def fn(m, x, v):
        index = (_long(m, [0, 0, 2, 0]), _long(m, [1, 1, 3, 1]))
        return x.index_put(index, v, accumulate=True)

    like_torch(fn, X, uniform((4,), seed=4))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m, x: x.index_put((_long(m, [0, 3]),), m.tensor(1.0, dtype=m.float64)), ["3"]),
        (
            lambda m, x: x.index_put((_long(m, [5]),), m.tensor(1.0, dtype=m.float64), True),
            ["5"],
        ),
        (lambda m, x: x.index_put((_long(m, [0]),), 1.0), ["tensor"]),
        (lambda m, x: x.index_put((_long(m, [0]), None), m.tensor(1.0, dtype=m.float64)), []),
        (lambda m, x: x.index_put((_long(m, [0]),), m.tensor(1.0)), ["float"]),
        (lambda m, x: x.index_put((_long(m, [0, 1]),), m.ones(3, dtype=m.float64)), []),
        (lambda m, x: x.index_put((m.tensor([0.0]),), m.tensor(1.0, dtype=m.float64)), []),
    ],
)
def test_index_put_errors_like_torch(backend: str, call, match: list) -> None:
    raises_like_torch(call, X, match=match)


@pytest.mark.cunumeric
def test_masked_scatter_like_torch(backend: str) -> None:
    source = np.arange(12.0).reshape(3, 4)

    def fn(m, x, s):
        rows = m.tensor([True, False, True])[:, None]
        columns = m.tensor([True, False, True, False])
        out = x.clone()
        assert out.masked_scatter_(columns, s) is out
        return x.masked_scatter(rows, s), m.masked_scatter(x, columns, s), out

    like_torch(fn, X, source)


def test_masked_scatter_broadcasts_self_and_takes_nothing_for_an_empty_mask(backend: str) -> None:
    like_torch(lambda m, x, s: x.masked_scatter(m.ones(2, 4, dtype=m.bool), s), X[0], X[:2])
    like_torch(lambda m, x, s: x.masked_scatter(m.zeros(3, 4, dtype=m.bool), s), X, np.zeros(0))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.masked_scatter(m.ones(3, 4, dtype=m.bool), m.arange(5.0)),
        lambda m, x: x.masked_scatter(m.ones(3, 4, dtype=m.bool), m.arange(12, dtype=m.float64)),
        lambda m, x: x.masked_scatter_(m.ones(2, 3, 4, dtype=m.bool), m.arange(24.0)),
    ],
)
def test_masked_scatter_errors_like_torch(backend: str, call) -> None:
    raises_like_torch(call, X.astype(np.float32))


def test_masked_scatter_refuses_a_uint8_mask_like_torch(backend: str) -> None:
    with pytest.warns(UserWarning):  # PyTorch warns that uint8 masks are deprecated, then raises
        raises_like_torch(
            lambda m, x: x.masked_scatter(m.ones(3, 4, dtype=m.uint8), x), X, match=["bool"]
        )


def test_gradients_by_finite_differences(backend: str) -> None:
    rows = tw.tensor([2, 0])
    mask = tw.tensor([[True, False, True, False], [False, False, True, True], [True] * 4])
    gradcheck(lambda x, s: x.index_copy(0, rows, s), X, uniform((2, 4), seed=5))
    # (a value that requires grad takes non-negative positions: PyTorch's value gradient
    # index_selects the raw index and refuses a negative one, session 36)
    gradcheck(lambda x, v: x.index_fill(1, tw.tensor([1, 3, 1]), v), X, np.array(0.5))
    gradcheck(lambda x: x.index_fill(1, tw.tensor([1, -1, 1]), 0.5), X)
    for accumulate in (False, True):
        gradcheck(
            lambda x, v, a=accumulate: x.index_put((rows, tw.tensor([1, 3])), v, accumulate=a),
            X,
            uniform((2,), seed=6),
        )
    gradcheck(lambda x, s: x.masked_scatter(mask, s), X, uniform((10,), seed=7))


def test_gradients_like_torch(backend: str) -> None:
    def index_fill(m, x, v):
        # A duplicate counts once (PyTorch's backward fails on negative indices).
        return x.index_fill(1, _long(m, [1, 3, 1]), v)

    def index_put(m, x, v):
        return x.index_put((_long(m, [0, 0, 2]), _long(m, [1, 1, 3])), v, accumulate=True)

    def masked_scatter(m, x, s):
        return x.masked_scatter(m.tensor([False, True, True, False]), s)

    grads_like_torch(index_fill, X, np.array(0.5))
    grads_like_torch(index_put, X, uniform((3,), seed=8))
    grads_like_torch(lambda m, x, v: x.index_put((_long(m, [1]),), v), X, uniform((4,), seed=9))
    grads_like_torch(masked_scatter, X, uniform((7,), seed=10))
    grads_like_torch(lambda m, x, s: x.index_copy(1, _long(m, [3, 1]), s), X, uniform((3, 2)))


def test_in_place_forms_have_torch_gradients_and_write_through_views(backend: str) -> None:
    def chain(m, x, v):
        y = x * 2
        y.index_copy_(0, _long(m, [1]), v[None, :])
        y.index_fill_(1, _long(m, [0]), v[0])
        y.index_put_((_long(m, [2, 2]), _long(m, [3, 3])), v[:2], accumulate=True)
        y.masked_scatter_(m.tensor([True, False, False, True]), m.cat([v.flip(0), v]))
        return y

    grads_like_torch(chain, X, uniform((4,), seed=11))

    def through_a_view(m, x):
        x[1].index_fill_(0, _long(m, [0, 2]), -1.0)
        x[:, 0].index_put_((_long(m, [2]),), m.tensor(5.0, dtype=m.float64))
        return x

    like_torch(through_a_view, X)


@pytest.mark.cunumeric
@pytest.mark.parametrize(
    ("shape", "wrap"), [((3, 3), False), ((5, 3), True), ((7, 3), True), ((7, 3), False)]
)
def test_fill_diagonal_like_torch(backend: str, shape: tuple, wrap: bool) -> None:
    def fn(m, x):
        assert x.fill_diagonal_(2.5, wrap=wrap) is x
        return x

    like_torch(fn, uniform(shape))


def test_fill_diagonal_of_cubes_and_integers_like_torch(backend: str) -> None:
    like_torch(lambda m, x: x.fill_diagonal_(3), np.zeros((2, 2, 2)))
    like_torch(lambda m, x: x.fill_diagonal_(-1), np.zeros((3, 4), dtype=np.uint8))
    like_torch(lambda m, x: x.fill_diagonal_(2.7), np.zeros((2, 4), dtype=np.int64), dtype="int64")
    like_torch(lambda m, x: x.fill_diagonal_(m.tensor(2.5)), np.zeros((2, 3)))


def test_fill_diagonal_errors_and_gradient_like_torch(backend: str) -> None:
    raises_like_torch(lambda m, x: x.fill_diagonal_(1), np.zeros((2, 3, 2)), match=["equal"])
    raises_like_torch(lambda m, x: x.fill_diagonal_(1), np.zeros(3), match=["2 dimensions|larger"])
    grads_like_torch(lambda m, x: (x * 2).fill_diagonal_(1.0), uniform((3, 4)))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.new_zeros([2, 1], dtype=m.int64),
        lambda m, x: x.new_zeros(size=(2,)),
        lambda m, x: x.new_ones(2, requires_grad=True),
        lambda m, x: x.new_full((3,), 1.7),
        lambda m, x: x.new_full([2], 1, dtype=m.int32),
        lambda m, x: x.new_tensor([1.5, 2.0], dtype=m.float64, requires_grad=True),
        lambda m, x: x.new_tensor([1.5], device="cpu"),
    ],
)
def test_new_constructors_take_torch_keywords(backend: str, call) -> None:
    ours = like_torch(call, X.astype(np.float32))
    assert ours.device == tw.get_backend()
    assert ours.requires_grad == call(torch, torch.zeros(1)).requires_grad


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.new_empty(2, 3),
        lambda m, x: x.new_empty((2, 3), dtype=m.float64, requires_grad=True),
        lambda m, x: x.new_empty(size=(2,), device="cpu"),
    ],
)
def test_new_empty_takes_torch_keywords(backend: str, call) -> None:
    # PyTorch leaves new_empty's memory uninitialised: compare all but the values.
    ours = call(tw, tw.zeros(1, dtype=tw.int32))
    theirs = call(torch, torch.zeros(1, dtype=torch.int32))
    assert (ours.shape, dtype_name(ours.dtype)) == (theirs.shape, dtype_name(theirs.dtype))
    assert ours.requires_grad == theirs.requires_grad
    assert ours.device == tw.get_backend()


def test_new_constructors_refuse_like_torch(backend: str) -> None:
    raises_like_torch(lambda m, x: x.new_full(3, 1.0), X)
    raises_like_torch(lambda m, x: x.new_empty(), X)
    raises_like_torch(lambda m, x: x.new_ones(2, requires_grad=True), X, dtype="int64")
