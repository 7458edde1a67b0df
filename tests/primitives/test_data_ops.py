"""Data primitives: host transfer, full, arange, the seeded generator, cast."""

from __future__ import annotations

import numpy as np
import pytest
from primitive_checks import (
    ALL,
    FLOATS,
    INTS,
    NO_FP_WARNINGS,
    check,
    fetch,
    host,
    nan,
    operands,
    put,
    require,
)
from tensorweaver.contract import dtypes as d

pytestmark = NO_FP_WARNINGS


@pytest.mark.parametrize("dtype", ALL, ids=lambda t: t.name)
def test_host_round_trip_keeps_values_and_dtype(backend, dtype):
    a, _ = operands(dtype)
    check(backend, put(backend, a, dtype), a, dtype, rtol=0)


@pytest.mark.parametrize("dtype", (d.bool_, d.int64, d.float32), ids=lambda t: t.name)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3)], ids=str)
def test_host_round_trip_of_0d_and_empty(backend, dtype, shape):
    a = host(np.ones(shape), dtype)
    check(backend, put(backend, a, dtype), a, dtype)


def test_from_host_copies_and_casts(backend):
    source = np.array([1.75, -1.75, 0.0, nan, -0.0], np.float32)
    x = backend.from_host(source, d.float32)
    source[:] = 5.0  # the backend array must not see this, even with no cast to make
    check(backend, x, [1.75, -1.75, 0.0, nan, -0.0], d.float32)
    # from_host casts like cast: floats to ints truncate toward zero, nonzero is True
    finite = np.array([1.75, -1.75, 0.0, 2.5])
    check(backend, backend.from_host(finite, d.int32), [1, -1, 0, 2], d.int32)
    check(backend, backend.from_host(finite, d.bool_), [True, True, False, True], d.bool_)


def test_to_host_returns_a_copy(backend):
    x = put(backend, [1.0, 2.0], d.float64)
    first = fetch(backend, x, d.float64)
    first[:] = -1.0
    check(backend, x, [1.0, 2.0], d.float64)


@pytest.mark.parametrize("dtype", ALL, ids=lambda t: t.name)
def test_full(backend, dtype):
    require(backend, dtype)
    value = True if dtype is d.bool_ else 3
    check(backend, backend.full((2, 3), value, dtype), np.full((2, 3), value), dtype)


@pytest.mark.parametrize("value", [nan, -float("inf"), -0.5])
def test_full_of_special_floats_and_shapes(backend, value):
    check(backend, backend.full((), value, d.float32), np.full((), value), d.float32)
    check(backend, backend.full((3, 0), value, d.float32), np.full((3, 0), value), d.float32)


@pytest.mark.parametrize(
    "start, stop, step, dtype",
    [
        (0, 10, 3, d.int8),
        (5, -6, -2, d.int32),
        (-3, 4, 1, d.int64),
        (3, 3, 1, d.int64),
        (0, 1, 0.1, d.float32),
        (-2.5, 2.5, 0.75, d.float64),
        (10, 0, -1.5, d.float16),
    ],
)
def test_arange(backend, start, stop, step, dtype):
    require(backend, dtype)
    want = np.arange(start, stop, step, dtype=np.float64)
    check(backend, backend.arange(start, stop, step, dtype), want, dtype)


def test_seed_makes_the_generator_repeat(backend):
    require(backend, d.float32)
    draws = []
    for seed in (7, 7, 8):
        backend.seed(seed)
        u = backend.random_uniform((64,), 0.0, 1.0, d.float32)
        n = backend.random_normal((64,), 0.0, 1.0, d.float32)
        draws.append(np.concatenate([fetch(backend, u, d.float32), fetch(backend, n, d.float32)]))
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2])


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.name)
def test_random_uniform_range_and_mean(backend, dtype):
    require(backend, dtype)
    backend.seed(0)
    u = fetch(backend, backend.random_uniform((4000,), -2.0, 3.0, dtype), dtype).astype(float)
    assert u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 5 * 5 / np.sqrt(12 * 4000)  # five standard errors
    assert fetch(backend, backend.random_uniform((), 0.0, 1.0, dtype), dtype).shape == ()


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.name)
def test_random_normal_moments(backend, dtype):
    require(backend, dtype)
    backend.seed(1)
    z = fetch(backend, backend.random_normal((4000,), 1.5, 2.0, dtype), dtype).astype(float)
    assert abs(z.mean() - 1.5) < 5 * 2.0 / np.sqrt(4000)
    assert abs(z.std() - 2.0) < 5 * 2.0 / np.sqrt(2 * 4000)


@pytest.mark.parametrize("dtype", INTS, ids=lambda t: t.name)
def test_random_integers_cover_the_half_open_range(backend, dtype):
    require(backend, dtype)
    low, high = (0, 7) if dtype is d.uint8 else (-3, 4)
    backend.seed(2)
    r = fetch(backend, backend.random_integers((500,), low, high, dtype), dtype)
    assert set(r.tolist()) == set(range(low, high))


CASTS = [
    # floats to ints truncate toward zero
    (d.float32, d.int32, [2.75, -2.75, 0.5, -0.5, 100.0]),
    (d.float64, d.int8, [2.75, -2.75, 0.5, -0.5, 100.0]),
    (d.float16, d.uint8, [2.75, 0.0, 0.5, 7.5, 200.0]),
    # anything to bool: nonzero (and NaN) is True
    (d.float32, d.bool_, [0.0, -0.0, nan, 1e-30, -3.0]),
    (d.int64, d.bool_, [0, 1, -1, 2, 0]),
    # bool and ints to floats and wider ints
    (d.bool_, d.float32, [True, False, True, True, False]),
    (d.bool_, d.int64, [True, False, True, True, False]),
    (d.int8, d.float16, [-128, 127, 0, -1, 5]),
    (d.uint8, d.int16, [255, 0, 1, 128, 7]),
    (d.int64, d.float64, [2**53, -(2**40), 0, 3, -7]),
    # between floats: rounding, and overflow to inf
    (d.float64, d.float32, [1 / 3, -1e-40, 1e39, nan, -0.0]),
    (d.float64, d.float16, [1 / 3, 65504.0, 1e5, -1e5, 6e-8]),
    (d.float16, d.float64, [0.1, -2.0, 65504.0, nan, 6e-8]),
]


@pytest.mark.parametrize(
    "source, target, values", CASTS, ids=[f"{s.name}-{t.name}" for s, t, _ in CASTS]
)
def test_cast(backend, source, target, values):
    require(backend, target)
    a = host(values, source)
    want = np.trunc(a.astype(np.float64)) if target in INTS else a
    if target is d.bool_:
        want = a.astype(np.float64) != 0  # NaN != 0 too
    check(backend, backend.cast(put(backend, a, source), target), want, target, rtol=0)


def test_cast_to_the_same_dtype(backend):
    x = put(backend, [1.5, -2.5], d.float32)
    check(backend, backend.cast(x, d.float32), [1.5, -2.5], d.float32, rtol=0)
