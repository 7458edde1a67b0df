"""``F.linear``'s bias against torch 2.13, which adds it one of two ways: inside one addmm
(a 2-D input; or a contiguous input with a contiguous bias that is one-dimensional in
effect) that refuses a bias of another dtype and broadcasts it to the flattened
``(rows, out_features)`` product, or afterwards by an in-place ``add_`` that keeps the
product's shape and dtype. Each named case failed before its fix; the seeded sweep compares
results (values, dtype, shape) and error classes over input ranks and layouts, bias shapes,
layouts and dtypes, inside and outside ``autocast``."""

from __future__ import annotations

import contextlib
import itertools
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch


def make(m: Any, shape: tuple, dtype: str, layout: str, seed: int) -> Any:
    """A tensor of ``shape``: contiguous (C), a transposed copy (T), stride-0 along the last
    axis (E), or every other element of a wider tensor (S)."""
    rs = np.random.RandomState(seed)
    if layout == "E" and shape and shape[-1]:
        base = rs.randn(*shape[:-1], 1)
        return m.tensor(base, dtype=getattr(m, dtype)).expand(*shape)
    if layout == "S" and shape:
        wide = rs.randn(*shape[:-1], 2 * shape[-1])
        return m.tensor(wide, dtype=getattr(m, dtype))[..., ::2]
    t = m.tensor(rs.randn(*shape), dtype=getattr(m, dtype))
    if layout == "T" and t.dim() >= 2:
        t = t.transpose(-1, -2).contiguous().transpose(-1, -2)
    return t


def outcome(m: Any, x: tuple, b: tuple | None, autocast: bool = False) -> Any:
    """linear's result as (shape, dtype, float64 values), or the exception's class name."""
    try:
        inp = make(m, *x, seed=0)
        weight = make(m, (3, inp.shape[-1]), x[1], "C", seed=1)
        bias = None if b is None else make(m, *b, seed=2)
        ctx = m.autocast("cpu", dtype=m.float16) if autocast else contextlib.nullcontext()
        with ctx:
            y = m.nn.functional.linear(inp, weight, bias)
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e).__name__
    values = np.asarray(y.detach().double()) if m is tw else y.detach().double().numpy()
    return tuple(y.shape), str(y.dtype).split(".")[-1], values


def assert_like_torch(x: tuple, b: tuple | None, autocast: bool = False) -> None:
    want, got = outcome(torch, x, b, autocast), outcome(tw, x, b, autocast)
    if isinstance(want, str) or isinstance(got, str):
        assert got == want, (x, b, autocast)
        return
    assert got[:2] == want[:2], (x, b, autocast)
    tol = 2e-3 if "float16" in (want[1], x[1]) or autocast else 1e-6
    np.testing.assert_allclose(got[2], want[2], rtol=tol, atol=tol, err_msg=str((x, b)))


NAMED = {
    # 5e4035d refused these (RuntimeError): torch adds a 2-D, 0-d, expanded or strided bias
    # after the product, in place, converting it to the product's dtype.
    "4-D input, 2-D bias of another dtype": (
        ((1, 2, 2, 4), "float32", "C"),
        ((2, 3), "float64", "C"),
    ),
    "3-D input, expanded bias of another dtype": (
        ((2, 2, 4), "float32", "C"),
        ((3,), "float64", "E"),
    ),
    "1-D input, strided bias of another dtype": (((4,), "float64", "C"), ((3,), "float32", "S")),
    "transposed 3-D input, bias of another dtype": (
        ((2, 2, 4), "float32", "T"),
        ((3,), "float64", "C"),
    ),
    # Before (both commits): promoted to the bias's dtype; torch keeps the product's.
    "unfused float16 product keeps its dtype": (
        ((1, 2, 2, 4), "float16", "C"),
        ((2, 3), "float32", "C"),
    ),
    "unfused product, int64 bias": (((2, 2, 4), "float64", "C"), ((3,), "int64", "E")),
    # Before: broadcast the output to the bias's shape; torch's in-place add refuses.
    "1-D input, 2-D bias grows the output": (((4,), "float32", "C"), ((2, 3), "float32", "C")),
    "1-D input, expanded (1, 3) bias": (((4,), "float32", "C"), ((1, 3), "float32", "E")),
    # Before: broadcast against the unflattened output; torch's addmm expands the bias to
    # the flattened (rows, out) product (a row per flattened row, or an error).
    "3-D input, (2, 1) bias vs 4 flattened rows": (
        ((2, 2, 4), "float32", "C"),
        ((2, 1), "float32", "C"),
    ),
    "3-D input, a bias row per flattened row": (
        ((3, 1, 4), "float64", "C"),
        ((3, 1), "float64", "C"),
    ),
    "4-D input, 3-D bias": (((5, 2, 2, 4), "float32", "C"), ((1, 1, 3), "float32", "C")),
    "1-D input, (1, 3) bias keeps the 1-D output": (
        ((4,), "float64", "C"),
        ((1, 3), "float64", "C"),
    ),
}


@pytest.mark.parametrize("case", list(NAMED))
def test_linear_bias_like_torch(case: str) -> None:
    assert_like_torch(*NAMED[case])


@pytest.mark.parametrize(
    "x, b",
    [
        # 5e4035d: refused (the bias is cast by autocast in torch, then added in place).
        (((4,), "float32", "C"), ((3,), "int64", "E")),
        # Before both: added without error; torch: the in-place add cannot grow (3,).
        (((4,), "float32", "C"), ((2, 3), "float32", "C")),
    ],
)
def test_linear_bias_under_autocast_like_torch(x: tuple, b: tuple) -> None:
    assert_like_torch(x, b, autocast=True)


SWEEP_INPUTS = [(4,), (2, 4), (2, 2, 4), (0, 4), (2, 0, 4), (1, 2, 2, 4), (3, 1, 4)]
SWEEP_BIASES = [(), (1,), (3,), (1, 1), (1, 3), (2, 3), (2, 1), (3, 1), (1, 1, 3)]


def sweep_cases() -> list[tuple]:
    rng = np.random.RandomState(2213)
    grid = list(
        itertools.product(
            SWEEP_INPUTS,
            ("float32", "float64", "float16"),
            ("C", "T", "E"),
            SWEEP_BIASES,
            ("float32", "float64", "float16", "int64"),
            ("C", "E", "S"),
        )
    )
    picks = rng.choice(len(grid), size=160, replace=False)
    return [grid[i] for i in sorted(picks)]


def test_linear_bias_sweep_like_torch() -> None:
    for xs, xd, xl, bs, bd, bl in sweep_cases():
        assert_like_torch((xs, xd, xl), (bs, bd, bl))
        if xd == "float32":
            assert_like_torch((xs, xd, xl), (bs, bd, bl), autocast=True)
