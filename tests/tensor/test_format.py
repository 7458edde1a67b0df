"""``format(tensor, spec)`` and ``operator.index(tensor)`` as PyTorch: a 0-d tensor formats
its value; other tensors accept only an empty spec."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import like_torch, make, raises_like_torch

SPECS = ["", ".4f", "+.2f", ">10.3e", "g", "08.3f"]


def same_text(fn: Any, value: np.ndarray) -> None:
    """``fn(tensor)`` gives the same string on tensorweaver and on torch."""
    assert fn(make(tw, value)) == fn(make(torch, value))


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("value", [1.5, -0.0625, 3.0], ids=str)
def test_zero_dim_float(backend: str, spec: str, value: float) -> None:
    same_text(lambda x: format(x, spec), np.array(value))
    same_text(lambda x: f"{x:{spec}}", np.array(value, dtype=np.float32))


@pytest.mark.parametrize("spec", ["", "d", "+5d", "x", ".2f"])
def test_zero_dim_int(backend: str, spec: str) -> None:
    same_text(lambda x: format(x, spec), np.array(42))


def test_zero_dim_bool(backend: str) -> None:
    same_text(lambda x: format(x, ""), np.array(True))


@pytest.mark.parametrize("shape", [(1,), (2, 2)])
def test_other_tensors_take_no_spec(backend: str, shape: tuple) -> None:
    value = np.ones(shape)
    raises_like_torch(lambda m, x: "{:+.2f}".format(x), value)  # noqa: UP032
    like_torch(lambda m, x: "{}".format(x) == repr(x), value)  # noqa: UP032


@pytest.mark.parametrize(
    "value", [np.array(3), np.array([2]), np.array(3.0), np.array([1, 2])], ids=repr
)
def test_index_like_torch(backend: str, value: Any) -> None:
    def as_index(m: Any, x: Any) -> Any:
        return operator.index(x), [10, 20, 30, 40][x]

    if value.dtype.kind == "i" and value.size == 1:
        like_torch(as_index, value)
    else:
        raises_like_torch(as_index, value)
