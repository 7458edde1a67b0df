"""Reductions and cumsum: axes and keepdims, exact dtypes, NaN, ties and empty axes."""

from __future__ import annotations

import numpy as np
import pytest
from primitive_checks import (
    FLOATS,
    INTS,
    NO_FP_WARNINGS,
    NUMERIC,
    RTOL,
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

AXES = [((0,), False), ((1, 2), True), ((0, 1, 2), False)]


def sample(dtype: d.DType, low: float, high: float) -> np.ndarray:
    """A (2, 3, 4) host array of ``dtype`` with values in [low, high]."""
    rng = np.random.default_rng(3)
    if dtype in FLOATS:
        return host(rng.uniform(low, high, (2, 3, 4)), dtype)
    return host(rng.integers(low, high + 1, (2, 3, 4)), dtype)


# Every integer width: the primitive keeps its operand's dtype (torch's own sum promotes
# narrow integers to int64; cuPyNumeric summed int8/16/32 over several axes wrongly).
@pytest.mark.parametrize("dtype", (*FLOATS, *INTS), ids=lambda t: t.name)
def test_sum(backend, dtype):
    a = sample(dtype, 0 if dtype is d.uint8 else -2, 2)
    x = put(backend, a, dtype)
    atol = RTOL.get(dtype, 0) * np.abs(exact(a)).sum()  # rounding grows with the terms
    for axes, keepdims in AXES:
        want = exact(a).sum(axis=axes, keepdims=keepdims)
        check(backend, backend.sum(x, axes, keepdims), want, dtype, atol=atol)


@pytest.mark.parametrize("dtype", (*FLOATS, *INTS), ids=lambda t: t.name)
def test_prod(backend, dtype):
    a = (
        sample(dtype, 0.5, 1.5)
        if dtype in FLOATS
        else sample(dtype, 0 if dtype is d.uint8 else -3, 3)
    )
    x = put(backend, a, dtype)
    rtol = RTOL.get(dtype, 0) * a.size  # one rounding per factor
    for axes, keepdims in AXES:
        want = exact(a).prod(axis=axes, keepdims=keepdims)
        check(backend, backend.prod(x, axes, keepdims), want, dtype, rtol=rtol)


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda t: t.name)
def test_max_and_min(backend, dtype):
    a = sample(dtype, 0, 9) if dtype is d.uint8 else sample(dtype, -9, 9)
    x = put(backend, a, dtype)
    check(backend, backend.max(x, (0, 2), False), a.max(axis=(0, 2)), dtype, rtol=0)
    check(backend, backend.min(x, (1,), True), a.min(axis=(1,), keepdims=True), dtype, rtol=0)


@pytest.mark.parametrize("dtype", (d.float32, d.float64), ids=lambda t: t.name)
def test_max_and_min_propagate_nan(backend, dtype):
    a = host([[1.0, nan, -3.0], [2.0, -1.0, 0.5], [nan, nan, nan]], dtype)
    x = put(backend, a, dtype)
    check(backend, backend.max(x, (1,), False), [nan, 2.0, nan], dtype)
    check(backend, backend.min(x, (1,), False), [nan, -1.0, nan], dtype)
    check(backend, backend.max(x, (0, 1), True), [[nan]], dtype)


def test_any_and_all(backend):
    a = np.zeros((2, 3, 4), bool)
    a[0, 0] = True  # one all-true row
    a[1, 1, 2] = True  # one mixed row; the rest all false
    x = put(backend, a, d.bool_)
    check(backend, backend.any(x, (2,), False), a.any(axis=2), d.bool_)
    check(backend, backend.all(x, (2,), True), a.all(axis=2, keepdims=True), d.bool_)
    check(backend, backend.any(x, (0, 1, 2), False), True, d.bool_)
    check(backend, backend.all(x, (0, 2), False), a.all(axis=(0, 2)), d.bool_)


# values, then the expected argmax along 1, argmin along 1 and argmax along 0: ties go to
# the first index, and NaN counts as the maximum and as the minimum.
ARG_CASES = {
    "float": (
        [[1.0, 3.0, 3.0, 0.0], [nan, 2.0, nan, 5.0], [-1.0, -1.0, -2.0, -2.0]],
        [1, 0, 0],
        [3, 0, 2],
        [1, 0, 1, 1],
    ),
    "int": ([[1, 3, 3, 0], [4, 2, 4, 5], [1, 1, 0, 0]], [1, 3, 0], [3, 1, 2], [1, 0, 1, 1]),
    "bool": (
        [[False, True, True, False], [True, True, True, True], [False, False, False, False]],
        [1, 0, 0],
        [0, 0, 0],
        [1, 0, 0, 1],
    ),
}


@pytest.mark.parametrize(
    "dtype", (d.bool_, d.uint8, d.int32, d.float16, d.float64), ids=lambda t: t.name
)
def test_argmax_and_argmin_take_the_first(backend, dtype):
    kind = "bool" if dtype is d.bool_ else "int" if dtype in INTS else "float"
    values, max_1, min_1, max_0 = ARG_CASES[kind]
    x = put(backend, values, dtype)
    check(backend, backend.argmax(x, 1, False), max_1, d.int64)
    check(backend, backend.argmin(x, 1, True), np.reshape(min_1, (3, 1)), d.int64)
    check(backend, backend.argmax(x, 0, True), [max_0], d.int64)


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda t: t.name)
def test_cumsum(backend, dtype):
    a, _ = operands(dtype)
    x = put(backend, a, dtype)
    # float16 rounds after every step; the error grows with the running sum's size
    atol = RTOL.get(dtype, 0) * 4 * np.nanmax(np.abs(exact(a))[np.isfinite(exact(a))])
    for axis in (0, 1):
        want = np.cumsum(exact(a), axis=axis)
        check(backend, backend.cumsum(x, axis), want, dtype, atol=atol)


def test_reductions_over_empty_axes(backend):
    f = put(backend, np.zeros((2, 0, 3)), d.float32)
    i = put(backend, np.zeros((2, 0)), d.int64)
    b = put(backend, np.zeros((0, 2)), d.bool_)
    check(backend, backend.sum(f, (1,), False), np.zeros((2, 3)), d.float32)
    check(backend, backend.prod(f, (0, 1), True), np.ones((1, 1, 3)), d.float32)
    check(backend, backend.sum(i, (1,), False), [0, 0], d.int64)
    check(backend, backend.any(b, (0,), False), [False, False], d.bool_)
    check(backend, backend.all(b, (0,), False), [True, True], d.bool_)
    check(backend, backend.max(f, (2,), False), np.zeros((2, 0)), d.float32)
    check(backend, backend.cumsum(f, 1), np.zeros((2, 0, 3)), d.float32)


COMPLEX = (d.complex64, d.complex128)


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda t: t.name)
def test_sum_and_prod_of_complex(backend, dtype):
    # cuPyNumeric 26.6 raised from Legate on a complex128 product (no such reduction).
    rng = np.random.default_rng(5)
    z = rng.uniform(0.8, 1.25, (2, 3, 4)) * np.exp(1j * rng.uniform(-np.pi, np.pi, (2, 3, 4)))
    z = host(z, dtype)
    x = put(backend, z, dtype)
    # the same values through a transposed view
    t = backend.permute(put(backend, np.ascontiguousarray(z.transpose(2, 1, 0)), dtype), (2, 1, 0))
    rtol = 1e-5 if dtype is d.complex64 else 1e-12
    for axes, keepdims in (*AXES, ((0, 2), False)):
        for name in ("sum", "prod"):
            want = getattr(np, name)(z.astype(np.complex128), axis=axes, keepdims=keepdims)
            for label, a in (("", x), (" of a transposed view", t)):
                what = f"{name} over {axes}{label}"
                got = fetch(backend, getattr(backend, name)(a, axes, keepdims), dtype, what)
                np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=what)
    empty = put(backend, np.zeros((2, 0)), dtype)
    got = fetch(backend, backend.prod(empty, (1,), False), dtype, "prod over an empty axis")
    np.testing.assert_array_equal(got, np.ones(2))
