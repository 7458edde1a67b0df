"""One-argument ``tw.where``, ``nonzero(as_tuple=True)`` and ``argwhere`` against PyTorch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tensor_reference import like_torch, raises_like_torch

VALUES = [
    np.array([[0.0, 1.5], [-2.0, 0.0]]),
    np.array([0, 3, 0, 0, 7]),
    np.array([[True, False, True]]),
    np.array(3.0),
    np.array(0.0),
    np.zeros((2, 0, 3)),
    np.arange(24).reshape(2, 3, 4) % 3,
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: f"{v.dtype}{list(v.shape)}")
def test_where_one_argument(backend: str, value: np.ndarray) -> None:
    like_torch(lambda m, x: m.where(x), value)


@pytest.mark.parametrize("value", VALUES, ids=lambda v: f"{v.dtype}{list(v.shape)}")
def test_argwhere(backend: str, value: np.ndarray) -> None:
    like_torch(lambda m, x: m.argwhere(x), value)
    like_torch(lambda m, x: x.argwhere(), value)


@pytest.mark.parametrize("value", VALUES, ids=lambda v: f"{v.dtype}{list(v.shape)}")
def test_nonzero_as_tuple(backend: str, value: np.ndarray) -> None:
    like_torch(lambda m, x: x.nonzero(as_tuple=True), value)
    like_torch(lambda m, x: m.nonzero(x, as_tuple=True), value)


def test_three_argument_where_still_selects(backend: str) -> None:
    cond = np.array([True, False, True])
    a, b = np.array([1.0, 2.0, 3.0]), np.array([-1.0, -2.0, -3.0])
    like_torch(lambda m, c, x, y: m.where(c, x, y), cond, a, b)
    like_torch(lambda m, c, x: m.where(c, x, 0.0), cond, a)
    like_torch(lambda m, c, x, y: m.where(c, input=x, other=y), cond, a, b)


def test_two_arguments_are_an_error(backend: str) -> None:
    def two(m: Any, c: Any, x: Any) -> Any:
        return m.where(c, x)

    raises_like_torch(two, np.array([True]), np.array([1.0]))
