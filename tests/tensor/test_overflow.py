"""Python numbers that do not fit: ``tensor`` and ``full`` raise PyTorch's error type, with a
message that says overflow and names the value and the range, and accept what PyTorch
accepts (floats beside a huge int make float data; negative ints wrap into uint8;
floats are truncated into integer dtypes; NumPy arrays are cast unchecked)."""

from __future__ import annotations

import numpy as np
import pytest
from tensor_reference import like_torch, raises_like_torch

BIG = 2**70
INT64_RANGE = r"\[-9223372036854775808, 9223372036854775807\]"


@pytest.mark.cunumeric
@pytest.mark.parametrize(
    "data", [[1, BIG], BIG, [2**63], [1, 2**63], [True, BIG], [[1], [BIG]], [-(2**63) - 1]]
)
def test_ints_past_int64_raise_like_torch(backend: str, data: object) -> None:
    bad = next(v for v in np.asarray(data, dtype=object).reshape(-1) if abs(v) >= 2**63)
    raises_like_torch(lambda m: m.tensor(data), match=["overflow", str(bad), INT64_RANGE])


def test_floats_beside_huge_ints_make_float_data_like_torch(backend: str) -> None:
    like_torch(lambda m: m.tensor([1.5, BIG]))
    like_torch(lambda m: m.tensor([BIG, 1.5, True]))
    like_torch(lambda m: m.tensor([[1, 2], [3.0, BIG]]))
    like_torch(lambda m: m.tensor([1, BIG], dtype=m.float64))
    like_torch(lambda m: m.tensor([BIG], dtype=m.bool))
    like_torch(lambda m: m.tensor([-(2**63), 2**63 - 1]))
    raises_like_torch(lambda m: m.tensor([1.5, 2**1100]), match=["overflow", "digits"])


@pytest.mark.parametrize(
    ("data", "dtype", "value", "range_"),
    [
        ([300], "uint8", "300", r"\[0, 255\]"),
        ([-256], "uint8", "-256", r"\[0, 255\]"),
        ([-0.5], "uint8", "-0.5", r"\[0, 255\]"),
        ([255.9], "uint8", "255.9", r"\[0, 255\]"),
        ([128], "int8", "128", r"\[-128, 127\]"),
        ([2**40], "int32", "1099511627776", r"\[-2147483648, 2147483647\]"),
        ([float("nan")], "int64", "nan", INT64_RANGE),
        ([1e20], "int64", "1e\\+20", INT64_RANGE),
        (300.0, "uint8", "300.0", r"\[0, 255\]"),
    ],
)
def test_numbers_past_an_integer_dtype_raise_like_torch(
    backend: str, data: object, dtype: str, value: str, range_: str
) -> None:
    raises_like_torch(
        lambda m: m.tensor(data, dtype=getattr(m, dtype)), match=["overflow", value, range_]
    )


def test_numbers_inside_an_integer_dtype_convert_like_torch(backend: str) -> None:
    like_torch(lambda m: m.tensor([-1, -255, 255], dtype=m.uint8))
    like_torch(lambda m: m.tensor([3.7, 0.0, 255.0], dtype=m.uint8))
    like_torch(lambda m: m.tensor([-128.0, 127.0, -5.5], dtype=m.int8))
    like_torch(lambda m: m.tensor([True, 5], dtype=m.uint8))
    like_torch(lambda m: m.tensor(np.array([300, -1]), dtype=m.uint8))  # arrays: unchecked
    like_torch(lambda m: m.tensor(np.uint8(5)))
    like_torch(lambda m: m.tensor([1e300, float("nan")], dtype=m.float32))


def test_tensors_inside_lists_are_checked_like_torch(backend: str) -> None:
    raises_like_torch(lambda m: m.tensor([m.tensor(300)], dtype=m.uint8), match=["300", "uint8"])


@pytest.mark.cunumeric
@pytest.mark.parametrize(
    ("value", "dtype", "match"),
    [
        (BIG, "int64", ["overflow", str(BIG), INT64_RANGE]),
        (BIG, "float64", ["overflow", str(BIG)]),
        (BIG, None, ["overflow", str(BIG)]),
        (300, "uint8", ["overflow", "300", r"\[0, 255\]"]),
        (-256, "uint8", ["overflow", "-256"]),
        (2**40, "int32", ["overflow", "1099511627776", r"\[-2147483648, 2147483647\]"]),
        (1.5e10, "int32", ["overflow", "15000000000.0"]),
        (float("nan"), "int32", ["overflow", "nan"]),
        (-1.0, "uint8", ["overflow", "-1.0"]),
        (1e5, "float16", ["overflow", "100000.0", "65504"]),
        (1e300, "float32", ["overflow", "1e\\+300", "3.4028235e\\+38"]),
    ],
)
def test_full_refuses_fill_values_like_torch(
    backend: str, value: object, dtype: str | None, match: list
) -> None:
    def fill(m: object) -> object:
        return m.full((2,), value, dtype=None if dtype is None else getattr(m, dtype))

    raises_like_torch(fill, match=match)


def test_full_converts_fill_values_like_torch(backend: str) -> None:
    like_torch(lambda m: m.full((2,), -1, dtype=m.uint8))
    like_torch(lambda m: m.full((2,), -255, dtype=m.uint8))
    like_torch(lambda m: m.full((2,), 3.7, dtype=m.uint8))
    like_torch(lambda m: m.full((2,), -2.9, dtype=m.int16))
    like_torch(lambda m: m.full((2,), True, dtype=m.int32))
    like_torch(lambda m: m.full((2,), float("inf"), dtype=m.float16))
    like_torch(lambda m: m.full((2,), np.int64(7), dtype=m.int8))
    like_torch(lambda m: m.zeros(3, dtype=m.uint8).fill_(-3))
    raises_like_torch(lambda m: m.zeros(3, dtype=m.uint8).fill_(300), match=["overflow", "300"])
