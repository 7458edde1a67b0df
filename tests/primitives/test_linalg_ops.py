"""matmul: 2-d and batched with broadcast batch axes, every numeric dtype, views, K = 0."""

from __future__ import annotations

import numpy as np
import pytest
from primitive_checks import FLOATS, NO_FP_WARNINGS, RTOL, check, exact, host, nan, put
from tensorweaver.contract import dtypes as d

pytestmark = NO_FP_WARNINGS


def pair(dtype: d.DType, a_shape: tuple, b_shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4)
    if dtype in FLOATS:
        return host(rng.uniform(-2, 2, a_shape), dtype), host(rng.uniform(-2, 2, b_shape), dtype)
    # small ints: every product sum fits int8
    return host(rng.integers(-2, 3, a_shape), dtype), host(rng.integers(-2, 3, b_shape), dtype)


def expect(backend, out, a: np.ndarray, b: np.ndarray, dtype: d.DType) -> None:
    # rounding grows with the inner dimension and the size of the terms
    atol = RTOL.get(dtype, 0) * a.shape[-1] * (np.abs(exact(a)) @ np.abs(exact(b))).max()
    check(backend, out, exact(a) @ exact(b), dtype, atol=atol)


@pytest.mark.parametrize(
    "dtype",
    (d.uint8, d.int8, d.int16, d.int32, d.int64, d.float16, d.float32, d.float64),
    ids=lambda t: t.name,
)
def test_matmul_2d(backend, dtype):
    a, b = pair(dtype, (3, 5), (5, 4))
    expect(backend, backend.matmul(put(backend, a, dtype), put(backend, b, dtype)), a, b, dtype)


@pytest.mark.parametrize(
    "a_shape, b_shape", [((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (4, 4, 2))]
)
def test_matmul_broadcasts_batch_axes(backend, a_shape, b_shape):
    a, b = pair(d.float32, a_shape, b_shape)
    out = backend.matmul(put(backend, a, d.float32), put(backend, b, d.float32))
    expect(backend, out, a, b, d.float32)


def test_matmul_of_transposed_views(backend):
    a, b = pair(d.float64, (4, 3), (5, 4))  # a.T @ b.T has shape (3, 5)
    at = backend.permute(put(backend, a, d.float64), (1, 0))
    bt = backend.permute(put(backend, b, d.float64), (1, 0))
    expect(backend, backend.matmul(at, bt), a.T, b.T, d.float64)


def test_matmul_with_an_empty_inner_dimension_is_zero(backend):
    x = put(backend, np.zeros((3, 0)), d.float32)
    y = put(backend, np.zeros((0, 2)), d.float32)
    check(backend, backend.matmul(x, y), np.zeros((3, 2)), d.float32)


def test_matmul_propagates_nan_and_inf(backend):
    a = put(backend, [[1.0, nan], [1.0, 2.0]], d.float64)
    b = put(backend, [[1.0, 0.0], [float("inf"), 1.0]], d.float64)
    check(backend, backend.matmul(a, b), [[nan, nan], [float("inf"), 2.0]], d.float64)
