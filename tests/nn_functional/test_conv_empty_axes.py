"""Convolutions with an empty axis, and transposed ones with a bias of another dtype,
against torch 2.13 (found reviewing 5e4035d's conv changes; the defects predate it): the
agreeing cases pass, the differing ones are strict xfails, recorded here because
``nn/functional/conv.py`` is owned elsewhere."""

from __future__ import annotations

from typing import Any

import pytest
import tensorweaver as tw
import torch


def outcome(m: Any, x: tuple, w: tuple) -> Any:
    try:
        y = m.nn.functional.conv2d(m.ones(*x), m.ones(*w), m.ones(w[0]), padding=1)
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e).__name__
    return tuple(y.shape), float(y.sum())


AGREE = {"empty batch": ((0, 2, 3, 3), (2, 2, 2, 2))}

DIFFER = {
    # torch: RuntimeError "expected weight to be at least 1 at dimension 0"; tw: NumPy's
    # ValueError leaks.
    "zero out_channels": ((2, 2, 3, 3), (0, 2, 2, 2)),
    "empty batch, zero out_channels": ((0, 2, 3, 3), (0, 2, 2, 2)),
    # torch: RuntimeError "Only zero batch or zero channel inputs are supported"; tw
    # computes a (2, 2, 1, 4) result of biases.
    "empty spatial axis": ((2, 2, 0, 3), (2, 2, 2, 2)),
    # torch: an empty (2, 0, 4, 4) result (its zero-channel path); tw: (2, 2, 4, 4) of
    # biases.
    "empty in_channels": ((2, 0, 3, 3), (2, 0, 2, 2)),
}


@pytest.mark.parametrize("case", list(AGREE))
def test_conv_empty_axis_like_torch(case: str) -> None:
    assert outcome(tw, *AGREE[case]) == outcome(torch, *AGREE[case])


@pytest.mark.parametrize("case", list(DIFFER))
def test_conv_empty_axis_differs_from_torch(case: str) -> None:
    assert outcome(tw, *DIFFER[case]) == outcome(torch, *DIFFER[case])


def transpose_outcome(m: Any, nd: int, dtype: str, bias_dtype: str) -> Any:
    fn = getattr(m.nn.functional, f"conv_transpose{nd}d")
    try:
        x = m.ones(1, 1, *[4] * nd, dtype=getattr(m, dtype))
        y = fn(x, m.ones(1, 1, *[2] * nd, dtype=x.dtype), m.ones(1, dtype=getattr(m, bias_dtype)))
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e).__name__
    return str(y.dtype).split(".")[-1], float(y.sum())


@pytest.mark.parametrize(
    "nd, dtype, bias_dtype",
    [(1, "float64", "int64"), (2, "float32", "complex64"), (1, "float32", "complex64")],
)
def test_conv_transpose_bias_dtype_like_torch(nd: int, dtype: str, bias_dtype: str) -> None:
    want = transpose_outcome(torch, nd, dtype, bias_dtype)
    assert transpose_outcome(tw, nd, dtype, bias_dtype) == want


@pytest.mark.parametrize(
    "nd, dtype, bias_dtype",
    [
        (1, "float32", "float64"),
        (2, "float64", "float32"),
        (2, "float32", "float16"),
        (3, "float64", "int64"),
    ],
)
def test_conv_transpose_bias_dtype_differs_from_torch(nd: int, dtype: str, bias_dtype: str) -> None:
    want = transpose_outcome(torch, nd, dtype, bias_dtype)
    assert transpose_outcome(tw, nd, dtype, bias_dtype) == want
