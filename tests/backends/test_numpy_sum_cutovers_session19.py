"""The cutovers of the NumPy backend's accurate float sums (session 19), on both sides.

Session 18 made every float sum off NumPy's pairwise path accurate; session 19 took back
its cost where that costs no accuracy: a sum over the leading axes of at most ``_BLOCK``
(16) rows adds them one after another, as the first level of torch 2.13's cascade sum does
(no longer widened to float64 first), and the first stage of the slab sum of
``_GEMV_MAX / 2`` to ``_GEMV_MAX`` elements is one BLAS matrix-vector product (the same sums
of 16 rows). Each
case is checked on both sides of its cutover against the float64 result on the same values
and against torch 2.13, with the session-18 tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver_numpy.backend import _BLOCK, _GEMV_MAX, _WIDEN_MAX
from test_numpy_reduction_accuracy_session18 import check_accurate, near_1e4, ours, theirs

F64_TOL = 2e-15  # relative: a few float64 ulps (the slab sum's bound at these sizes)

# Leading-axis shapes at the row cutover (at most _WIDEN_MAX elements: the widened path
# beyond _BLOCK rows) and at the matrix-vector cutovers (multiples of _BLOCK rows whose
# slabs hold one slab less than _GEMV_MAX / 2 elements, exactly _GEMV_MAX / 2 and
# _GEMV_MAX, one slab more; and a remainder of rows).
ROW_SHAPES = [(_BLOCK, 400), (_BLOCK + 1, 400), (4, 4, 300), (_BLOCK + 1, 3, 100)]
GEMV_SHAPES = [
    (128 - _BLOCK, _GEMV_MAX // 256),
    (128, _GEMV_MAX // 256),
    (256, _GEMV_MAX // 256),
    (256 + _BLOCK, _GEMV_MAX // 256),
    (263, 512),
]


def test_the_shapes_straddle_the_cutovers():
    rows = [math.prod(s[:-1]) if len(s) == 3 and s[0] == 4 else s[0] for s in ROW_SHAPES]
    assert min(rows) <= _BLOCK < max(rows)
    assert all(math.prod(s) <= _WIDEN_MAX for s in ROW_SHAPES)
    slabs = [s[0] // _BLOCK * _BLOCK * s[1] for s in GEMV_SHAPES]
    assert slabs[0] < slabs[1] == _GEMV_MAX // 2 and slabs[2] == _GEMV_MAX < slabs[3]


def _leading(t):
    return t.sum(tuple(range(t.ndim - 1)))


@pytest.mark.parametrize("shape", ROW_SHAPES + GEMV_SHAPES, ids=str)
def test_float32_leading_sums(shape):
    data = near_1e4(shape, seed=len(shape))
    truth = data.astype(np.float64).sum(tuple(range(len(shape) - 1)))
    check_accurate(ours(_leading(tw.tensor(data))), truth, theirs(_leading(torch.from_numpy(data))))


@pytest.mark.parametrize("shape", GEMV_SHAPES, ids=str)
def test_float64_leading_sums(shape):
    data = near_1e4(shape).astype(np.float64) + np.random.default_rng(1).random(shape) * 1e-9
    truth = np.array([math.fsum(column) for column in data.T])
    error = np.max(np.abs(ours(tw.tensor(data).sum(0)) - truth) / np.abs(truth))
    assert error <= F64_TOL


@pytest.mark.parametrize("rows", [_BLOCK, _BLOCK + 1, 256])
def test_float32_var_and_mean_over_rows(rows):
    data = near_1e4((rows, 300), seed=rows)
    wide, narrow, here = (
        torch.from_numpy(data.astype(np.float64)),
        torch.from_numpy(data),
        tw.tensor(data),
    )
    check_accurate(ours(here.var(0)), theirs(wide.var(0)), theirs(narrow.var(0)))
    check_accurate(ours(here.mean(0)), theirs(wide.mean(0)), theirs(narrow.mean(0)))


@pytest.mark.parametrize("shape", [(_BLOCK, 8), (256, 8)], ids=str)
def test_non_finite_columns_as_torch(shape):
    # (a matrix-vector product must not turn inf + -inf, or a NaN, into a number)
    data = np.ones(shape, np.float32)
    data[3, 1] = np.inf
    data[3, 2], data[5, 2] = np.inf, -np.inf
    data[7, 3] = np.nan
    data[:, 4] = -0.0
    data[9, 5] = -np.inf
    expected = theirs(torch.from_numpy(data).sum(0))
    np.testing.assert_array_equal(ours(tw.tensor(data).sum(0)), expected)
    assert not np.signbit(ours(tw.tensor(data).sum(0))[4])  # torch's sum of -0.0s is 0.0
