"""How results are measured against NumPy float64: rounding to the dtype, non-finite values,
exact integers, and array-scaled differences for layers and gradients."""

from __future__ import annotations

import math

import numpy as np
from tensorweaver.check.compare import measure, measure_array, to_dtype
from tensorweaver.contract import dtypes as d


def test_expected_values_are_rounded_to_the_dtype_first():
    got = np.array([np.float16(1 / 3), np.float16(np.inf)])
    m = measure("op", got, [1 / 3, 1e6], d.float16)  # 1e6 overflows float16: inf is right
    assert m.ok and m.difference == 0.0


def test_bfloat16_rounds_to_nearest_even_on_8_bits():
    # 1 + 2**-8 lies halfway between bfloat16 neighbours 1 and 1 + 2**-7: ties go to even (1)
    values = to_dtype([1 + 2**-8, 1 + 3 * 2**-8, -(2**-9), np.nan], d.bfloat16)
    assert values.dtype == np.float32
    np.testing.assert_array_equal(values[:3], [1.0, 1 + 2**-6, -(2**-9)])
    assert np.isnan(values[3])


def test_nan_and_infinity_must_match_exactly():
    ok = measure("op", np.array([np.nan, -np.inf, 1.0]), [np.nan, -np.inf, 1.0], d.float64)
    assert ok.ok
    for got in ([0.0, -np.inf, 1.0], [np.nan, np.inf, 1.0], [np.nan, -np.inf, np.nan]):
        m = measure("op", np.array(got), [np.nan, -np.inf, 1.0], d.float64)
        assert not m.ok and math.isinf(m.difference)


def test_a_difference_is_relative_above_one_and_absolute_below():
    m = measure("op", np.array([1000.5, 0.25]), [1000.0, 0.2], d.float64)
    assert abs(m.difference - 0.05) < 1e-12 and "at (1,)" in m.detail


def test_integers_are_exact_and_say_where_they_differ():
    m = measure("add", np.array([[1, 2], [3, 5]], np.int8), [[1, 2], [3, 4]], d.int8)
    assert not m.ok and m.detail == "at (1, 1) got 5, expected 4"


def test_a_wrong_shape_is_an_infinite_difference():
    m = measure("op", np.zeros((2, 3)), np.zeros((3, 2)), d.float32)
    assert not m.ok and "result shape (2, 3), expected (3, 2)" in m.detail


def test_gradients_are_scaled_by_their_largest_value():
    want = np.array([100.0, 1e-3])
    m = measure_array("grad of x", np.array([100.0, 1e-3 + 1e-8]), want, d.float64)
    assert abs(m.difference - 1e-10) < 1e-16
    assert m.ok  # 1e-8 off on a small element of a gradient whose scale is 100
