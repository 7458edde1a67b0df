"""masked_fill and setitem with a Python number follow PyTorch's overflow rules: an unsigned
dtype takes negative ints down to -max (they wrap), other values out of range raise
RuntimeError (NumPy raised OverflowError, or the value wrapped or became inf silently)."""

from __future__ import annotations

import math

import pytest
from tensor_reference import like_torch, raises_like_torch

MASK = [True, False, True]
FITS = [("uint8", -2), ("uint8", -255), ("int8", -128), ("float16", math.inf), ("int64", 7.9)]
OVERFLOWS = [("int8", 256), ("uint8", 300), ("uint8", -256), ("float16", 70000.0),
             ("int64", math.nan), ("int32", math.inf)]  # fmt: skip


@pytest.mark.parametrize(("dtype", "value"), FITS, ids=str)
def test_fill_values_that_fit_like_torch(backend: str, dtype: str, value: float) -> None:
    like_torch(lambda m: m.tensor([1, 2, 3], dtype=getattr(m, dtype)).masked_fill(
        m.tensor(MASK), value))  # fmt: skip

    def setitem(m):
        t = m.tensor([1, 2, 3], dtype=getattr(m, dtype))
        t[0] = value
        return t

    like_torch(setitem)


@pytest.mark.parametrize(("dtype", "value"), OVERFLOWS, ids=str)
def test_fill_values_that_overflow_raise_like_torch(backend: str, dtype: str, value: float) -> None:
    raises_like_torch(
        lambda m: m.tensor([1, 2, 3], dtype=getattr(m, dtype)).masked_fill(m.tensor(MASK), value)
    )
