"""Python numbers into uint8 through ``tw.ByteTensor`` and ``tw.tensor(..., dtype=tw.uint8)``,
as PyTorch converts them: a float must lie in [0, 255] (so every negative float, even
-0.5, raises), a negative int down to -255 wraps around, each number by its own type even
where ints and floats mix; NumPy arrays are cast unchecked.
"""

from __future__ import annotations

import numpy as np
import pytest
from tensor_reference import like_torch, raises_like_torch


@pytest.mark.parametrize("data", [[-1.0], [-1.5], [-0.5], [255.5], [256.0], [300], [-256]])
def test_out_of_range_numbers_raise_like_torch(backend: str, data: list) -> None:
    raises_like_torch(lambda m: m.ByteTensor(data), match=["uint8", r"\[0, 255\]"])
    raises_like_torch(lambda m: m.tensor(data, dtype=m.uint8), match=["uint8"])


def test_numbers_in_range_convert_like_torch(backend: str) -> None:
    like_torch(lambda m: m.ByteTensor([-1, -255, 255.0, 0.9, 7.99]))
    like_torch(lambda m: m.tensor([[-1], [255]], dtype=m.uint8))
    like_torch(lambda m: m.tensor([[-1], [2.5]], dtype=m.uint8))  # each by its own type
    like_torch(lambda m: m.tensor([-128, 126.5, True], dtype=m.int8))


def test_a_float_beside_ints_is_still_checked_like_torch(backend: str) -> None:
    raises_like_torch(lambda m: m.ByteTensor([-1, -0.5]), match=["-0.5", "uint8"])
    raises_like_torch(lambda m: m.tensor([3, 128.0], dtype=m.int8), match=["128"])
    raises_like_torch(lambda m: m.tensor([-256, 1.5], dtype=m.uint8), match=["-256"])


def test_arrays_and_tensors_cast_without_checks_like_torch(backend: str) -> None:
    like_torch(lambda m: m.tensor(np.array([-1.0, 300.0]), dtype=m.uint8))
    like_torch(lambda m: m.tensor([-1.0, 255.0]).to(m.uint8))
