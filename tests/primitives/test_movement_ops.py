"""Movement primitives: reshape, permute, expand, pad, slice, flip, cat, on any layout."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from primitive_checks import ALL, NO_FP_WARNINGS, check, host, inf, nan, put
from tensorweaver.contract import dtypes as d

pytestmark = NO_FP_WARNINGS


def arange_host(shape: tuple[int, ...], dtype: d.DType = d.float32) -> np.ndarray:
    return host(np.arange(int(np.prod(shape))).reshape(shape), dtype)


def test_reshape(backend):
    a = arange_host((2, 3, 4))
    x = put(backend, a, d.float32)
    check(backend, backend.reshape(x, (4, 6)), a.reshape(4, 6), d.float32)
    check(backend, backend.reshape(x, (24,)), a.reshape(24), d.float32)
    scalar = put(backend, 7.0, d.float32)
    check(backend, backend.reshape(scalar, (1, 1)), [[7.0]], d.float32)
    one = backend.reshape(put(backend, [5.0], d.float32), ())
    check(backend, one, 5.0, d.float32)
    check(backend, backend.reshape(put(backend, np.zeros((0, 3)), d.float32), (3, 0)),
          np.zeros((3, 0)), d.float32)  # fmt: skip


def test_reshape_of_non_contiguous_views_follows_c_order(backend):
    a = arange_host((2, 3, 4))
    p = backend.permute(put(backend, a, d.float32), (2, 0, 1))  # (4, 2, 3), not contiguous
    check(backend, backend.reshape(p, (8, 3)), a.transpose(2, 0, 1).reshape(8, 3), d.float32)
    s = backend.slice(put(backend, a, d.float32), (0, 1, 0), (2, 3, 4), (1, 1, 3))
    check(backend, backend.reshape(s, (8,)), a[:, 1:3, ::3].reshape(8), d.float32)


@pytest.mark.parametrize("perm", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0)], ids=str)
def test_permute(backend, perm):
    a = arange_host((2, 3, 4))
    check(backend, backend.permute(put(backend, a, d.float32), perm), a.transpose(perm), d.float32)


@pytest.mark.parametrize(
    "source, shape", [((3, 1), (3, 4)), ((1,), (5,)), ((1, 2, 1), (3, 2, 2)), ((0, 1), (0, 3))]
)
def test_expand(backend, source, shape):
    a = arange_host(source, d.int32)
    check(backend, backend.expand(put(backend, a, d.int32), shape), np.broadcast_to(a, shape),
          d.int32)  # fmt: skip


def test_expand_of_non_contiguous_views(backend):
    a = arange_host((1, 3))
    column = backend.permute(put(backend, a, d.float32), (1, 0))  # (3, 1) from a transpose
    check(backend, backend.expand(column, (3, 4)), np.broadcast_to(a.T, (3, 4)), d.float32)
    tall = arange_host((6, 1))
    every_other = backend.slice(put(backend, tall, d.float32), (0, 0), (6, 1), (2, 1))
    check(backend, backend.expand(every_other, (3, 2)), np.broadcast_to(tall[::2], (3, 2)),
          d.float32)  # fmt: skip


@pytest.mark.parametrize(
    "dtype, value", [(d.float32, nan), (d.float64, -inf), (d.int8, -3), (d.bool_, True)],
    ids=lambda v: getattr(v, "name", str(v)),
)  # fmt: skip
def test_pad(backend, standard, dtype, value):
    a, x = standard.get(dtype, "a")
    widths = ((1, 0), (2, 3))
    want = np.pad(a, widths, constant_values=value)
    check(backend, backend.pad(x, widths, value), want, dtype, rtol=0)


def test_pad_edge_cases(backend):
    empty = put(backend, np.zeros((0, 2)), d.float32)
    check(backend, backend.pad(empty, ((1, 1), (0, 0)), 4.0), np.full((2, 2), 4.0), d.float32)
    a = arange_host((2, 2))
    check(backend, backend.pad(put(backend, a, d.float32), ((0, 0), (0, 0)), 1.0), a, d.float32)
    check(backend, backend.pad(put(backend, 3.0, d.float32), (), 0.0), 3.0, d.float32)


@st.composite
def slicings(draw) -> tuple:
    """(shape, starts, stops, steps) within the IR's bounds for slice."""
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
    bounds = [sorted(draw(st.tuples(st.integers(0, n), st.integers(0, n)))) for n in shape]
    steps = tuple(draw(st.integers(1, 3)) for _ in shape)
    return shape, tuple(b[0] for b in bounds), tuple(b[1] for b in bounds), steps


@settings(max_examples=12, deadline=None)
@given(case=slicings(), permuted=st.booleans())
def test_slice(backend, case, permuted):
    shape, starts, stops, steps = case
    a = arange_host(shape)
    if permuted:  # the same values through a non-contiguous view
        rev = tuple(reversed(range(len(shape))))
        x = backend.permute(put(backend, a.transpose(rev), d.float32), rev)
    else:
        x = put(backend, a, d.float32)
    want = a[tuple(map(slice, starts, stops, steps))]
    check(backend, backend.slice(x, starts, stops, steps), want, d.float32)


def test_slice_of_a_slice(backend):
    a = arange_host((6, 5))
    s = backend.slice(put(backend, a, d.float32), (1, 0), (6, 5), (2, 2))  # rows 1, 3, 5
    check(backend, backend.slice(s, (1, 1), (3, 3), (1, 1)), a[1::2, ::2][1:3, 1:3], d.float32)


@pytest.mark.parametrize("axes", [(0,), (2,), (0, 2), (0, 1, 2)], ids=str)
def test_flip(backend, axes):
    a = arange_host((2, 3, 4))
    check(backend, backend.flip(put(backend, a, d.float32), axes), np.flip(a, axes), d.float32)


def test_flip_of_a_permuted_view(backend):
    a = arange_host((3, 4))
    p = backend.permute(put(backend, a, d.float32), (1, 0))
    check(backend, backend.flip(p, (1,)), np.flip(a.T, 1), d.float32)


@pytest.mark.parametrize("dtype", ALL, ids=lambda t: t.name)
def test_cat(backend, standard, dtype):
    (a, x), (b, y) = standard.get(dtype, "a"), standard.get(dtype, "b")
    empty = backend.slice(x, (0, 0), (3, 0), (1, 1))
    check(backend, backend.cat([x, empty, y], 1), np.concatenate([a, b], 1), dtype, rtol=0)
    check(backend, backend.cat((x, y), 0), np.concatenate([a, b], 0), dtype, rtol=0)


def test_cat_of_views_and_of_one_array(backend):
    a = arange_host((3, 4))
    x = put(backend, a, d.float32)
    t = backend.permute(put(backend, a.T.copy(), d.float32), (1, 0))  # equals a, not contiguous
    check(backend, backend.cat([x, t], 0), np.concatenate([a, a], 0), d.float32)
    check(backend, backend.cat([t], 1), a, d.float32)
