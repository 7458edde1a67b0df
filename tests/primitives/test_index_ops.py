"""Index primitives: gather, take, scatter, scatter_add (duplicates accumulate), nonzero."""

from __future__ import annotations

import numpy as np
import pytest
from primitive_checks import (
    ALL,
    INTS,
    NO_FP_WARNINGS,
    check,
    exact,
    fetch,
    host,
    nan,
    operands,
    put,
)
from tensorweaver.contract import dtypes as d

pytestmark = NO_FP_WARNINGS

#: Along axis 1 of a (3, 4) array: repeats within a row, and an index shape narrower than a.
INDEX_1 = [[3, 0, 3], [1, 1, 2], [0, 3, 3]]
#: Along axis 0 of a (3, 4) array, shape (2, 4).
INDEX_0 = [[2, 0, 2, 1], [2, 2, 0, 1]]


def along(index: np.ndarray, axis: int) -> tuple:
    """The NumPy fancy index that takes ``index`` along ``axis`` (index's own shape)."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[axis] = index
    return tuple(grid)


@pytest.mark.parametrize("dtype", (d.bool_, d.int64, d.float16, d.float32), ids=lambda t: t.name)
def test_gather(backend, standard, dtype):
    a, x = standard.get(dtype, "a")
    for axis, index in ((1, INDEX_1), (0, INDEX_0)):
        i = np.array(index)
        out = backend.gather(x, axis, put(backend, i, d.int64))
        check(backend, out, a[along(i, axis)], dtype, rtol=0)


def test_gather_from_a_permuted_view_and_with_an_empty_index(backend):
    a = host(np.arange(12).reshape(3, 4), d.float32)
    p = backend.permute(put(backend, a.T.copy(), d.float32), (1, 0))  # equals a, not contiguous
    i = np.array(INDEX_1)
    check(backend, backend.gather(p, 1, put(backend, i, d.int64)), a[along(i, 1)], d.float32)
    empty = put(backend, np.zeros((3, 0), np.int64), d.int64)
    check(backend, backend.gather(p, 1, empty), np.zeros((3, 0)), d.float32)


@pytest.mark.parametrize("dtype", (d.bool_, d.int8, d.float64), ids=lambda t: t.name)
def test_take(backend, standard, dtype):
    a, x = standard.get(dtype, "a")
    rows = np.array([2, 0, 2, 2])
    check(backend, backend.take(x, 0, put(backend, rows, d.int64)), a[rows], dtype, rtol=0)
    cols = np.array([3, 1])
    check(backend, backend.take(x, 1, put(backend, cols, d.int64)), a[:, cols], dtype, rtol=0)
    none = put(backend, np.zeros(0, np.int64), d.int64)
    check(backend, backend.take(x, 1, none), a[:, :0], dtype, rtol=0)


def test_scatter_writes_one_of_the_duplicates(backend):
    a = host(np.zeros((3, 4)), d.float32)
    x = put(backend, a, d.float32)
    src = host(np.arange(1, 10).reshape(3, 3), d.float32)
    index = np.array([[0, 2, 3], [1, 1, 1], [3, 2, 0]])  # row 1 writes column 1 three times
    got = backend.to_host(
        backend.scatter(x, 1, put(backend, index, d.int64), put(backend, src, d.float32))
    )
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got[[0, 0, 0, 2, 2, 2], [0, 2, 3, 3, 2, 0]], [1, 2, 3, 7, 8, 9])
    assert got[1, 1] in (4.0, 5.0, 6.0)
    np.testing.assert_array_equal(got[1, [0, 2, 3]], 0.0)
    np.testing.assert_array_equal(got[0, 1], 0.0)
    check(backend, x, a, d.float32)  # the input is untouched


@pytest.mark.parametrize("dtype", ALL, ids=lambda t: t.name)
def test_scatter_of_every_dtype(backend, standard, dtype):
    # The core scatters in the tensor's own dtype (index_put, masked_scatter, gradients).
    a, x = standard.get(dtype, "a")
    b, _ = operands(dtype)
    index = np.array([[2, 0, 1, 1], [0, 2, 2, 0]])  # along axis 0, no duplicate in a column
    src = b[:2]
    want = a.copy()
    want[along(index, 0)] = src
    out = backend.scatter(x, 0, put(backend, index, d.int64), put(backend, src, dtype))
    check(backend, out, want, dtype, rtol=0)


@pytest.mark.parametrize("dtype", (*INTS, d.float32, d.float64), ids=lambda t: t.name)
def test_scatter_add_accumulates_duplicates(backend, dtype):
    a, _ = operands(dtype)
    a = np.nan_to_num(a, nan=0.5, posinf=9.0, neginf=-9.0)  # keep the sums finite
    x = put(backend, a, dtype)
    for axis, index in ((1, INDEX_1), (0, INDEX_0)):
        i = np.array(index)
        src = host(np.arange(1, i.size + 1).reshape(i.shape) * 0.5, dtype)
        want = exact(a).copy()
        np.add.at(want, along(i, axis), exact(src))
        out = backend.scatter_add(x, axis, put(backend, i, d.int64), put(backend, src, dtype))
        check(backend, out, want, dtype)
    check(backend, x, a, dtype)  # the input is untouched


def test_scatter_add_propagates_nan_and_inf(backend):
    x = put(backend, np.zeros((1, 3)), d.float64)
    i = put(backend, [[0, 0, 1, 2]], d.int64)
    src = put(backend, [[nan, 1.0, float("inf"), float("inf")]], d.float64)
    check(
        backend, backend.scatter_add(x, 1, i, src), [[nan, float("inf"), float("inf")]], d.float64
    )


NONZERO = [
    ("float", d.float32, [[0.0, -0.0, nan], [1e-30, 0.0, -2.0]]),
    ("int", d.int16, [[0, 3, 0, -1], [0, 0, 0, 0], [7, 0, 0, 1]]),
    ("bool", d.bool_, [[[True, False], [False, True]], [[False, False], [True, True]]]),
    ("0-d true", d.float64, 2.5),
    ("0-d false", d.int32, 0),
    ("empty", d.float32, np.zeros((2, 0))),
    ("none", d.float32, np.zeros((2, 3))),
]


@pytest.mark.parametrize("dtype, values", [c[1:] for c in NONZERO], ids=[c[0] for c in NONZERO])
def test_nonzero(backend, dtype, values):
    a = host(values, dtype)
    coords = [c for c in np.ndindex(a.shape) if a[c] != 0]  # C order; NaN != 0 too
    want = np.array(coords, np.int64).reshape(len(coords), a.ndim)
    check(backend, backend.nonzero(put(backend, a, dtype)), want, d.int64)


@pytest.mark.parametrize("dtype", (d.complex64, d.complex128), ids=lambda t: t.name)
def test_scatter_add_of_complex(backend, dtype):
    # cuPyNumeric summed a complex src through a real-weighted histogram: the imaginary
    # parts were dropped, silently.
    rng = np.random.default_rng(6)
    a = host(rng.uniform(-2, 2, (3, 4)) + 1j * rng.uniform(-2, 2, (3, 4)), dtype)
    x = put(backend, a, dtype)
    for axis, index in ((1, INDEX_1), (0, INDEX_0)):
        i = np.array(index)
        src = host(rng.uniform(-2, 2, i.shape) + 1j * rng.uniform(-2, 2, i.shape), dtype)
        want = a.astype(np.complex128)
        np.add.at(want, along(i, axis), src)
        out = backend.scatter_add(x, axis, put(backend, i, d.int64), put(backend, src, dtype))
        got = fetch(backend, out, dtype, f"scatter_add along {axis}")
        rtol = 1e-5 if dtype is d.complex64 else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    inf = float("inf")
    src = host([[complex(1.0, inf), complex(-2.0, -inf), complex(nan, 0.5), 1j]], dtype)
    out = backend.scatter_add(
        put(backend, np.zeros((1, 3)), dtype),
        1,
        put(backend, [[0, 1, 2, 2]], d.int64),
        put(backend, src, dtype),
    )
    got = fetch(backend, out, dtype, "scatter_add of infinite parts")
    np.testing.assert_array_equal(got.real, [[1.0, -2.0, nan]])
    np.testing.assert_array_equal(got.imag, [[inf, -inf, 1.5]])
