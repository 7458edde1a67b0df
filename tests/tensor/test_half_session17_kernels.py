"""float16 linear, conv2d and softmax on the NumPy backend as torch 2.13's CPU kernels: float32
sums rounded once to float16 (session 17).

NumPy's float16 matmul already sums in float32, but its other float16 loops round every step:
before session 17 the bias added to a rounded product (linear, conv2d), the bias gradient's
sum, conv2d's input gradient and softmax differed from torch (linear: 8 of 30 outputs and 4
of 5 bias gradients; softmax: 47 of 60 outputs).

The matrix inputs are multiples of 1/8 with small numerators, so every product and every
partial sum is exact in float32: the float32 sums do not depend on the order BLAS or
torch's kernels add in (no machine dependence), while a float16 running sum still rounds.
Which kernel torch takes does depend on the CPU: without oneDNN's float16 (AVX512-FP16 or
AMX-FP16) its im2col path adds conv2d's input-gradient columns up in float16, which the NumPy
backend follows (``contract.cpu_loops.onednn_convolves``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered


def _eighths(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(-60, 61, shape) / 8


def _results(m: Any, fn: Callable, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """``fn``'s float16 output and its inputs' gradients for a seeded output gradient."""
    ts = [m.tensor(a, dtype=m.float16, requires_grad=True) for a in arrays]
    y = fn(m, *ts)
    g = np.random.default_rng(9).integers(-8, 9, tuple(y.shape)) / 4
    y.backward(m.tensor(g, dtype=m.float16))
    return [np.asarray(t.detach().double().numpy()) for t in (y, *(t.grad for t in ts))]


EXACT: dict[str, tuple[Callable, Callable]] = {
    "linear": (
        lambda m, x, w, b: m.nn.functional.linear(x, w, b),
        lambda r: [_eighths(r, 12, 40), _eighths(r, 6, 40), _eighths(r, 6)],
    ),
    "conv2d": (
        lambda m, x, w, b: m.nn.functional.conv2d(x, w, b, padding=1),
        lambda r: [_eighths(r, 2, 3, 6, 6), _eighths(r, 4, 3, 3, 3), _eighths(r, 4)],
    ),
    "conv2d_strided": (
        lambda m, x, w, b: m.nn.functional.conv2d(x, w, b, stride=2),
        lambda r: [_eighths(r, 2, 4, 7, 7), _eighths(r, 3, 4, 3, 3), _eighths(r, 3)],
    ),
}


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("name", list(EXACT))
def test_float16_products_round_once_as_torch(spec: str, name: str) -> None:
    fn, draw = EXACT[name]
    arrays = draw(np.random.default_rng(list(EXACT).index(name)))
    want = _results(torch, fn, arrays)
    with entered(spec):
        got = _results(tw, fn, arrays)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many float16 steps apart ``a`` and ``b`` (float16 values held as doubles) are."""
    order = lambda x: np.asarray(x, np.float16).view(np.int16).astype(np.int32)  # noqa: E731
    ia, ib = order(a), order(b)
    ia = np.where(ia < 0, -32768 - ia, ia)  # two's complement order for negatives
    ib = np.where(ib < 0, -32768 - ib, ib)
    return np.abs(ia - ib)


@pytest.mark.parametrize("spec", FAST)
def test_float16_softmax_rounds_once_as_torch(spec: str) -> None:
    # exp's float32 value depends on the library (NumPy's loops, torch's vectorized exp):
    # it may move a float32 result across a float16 rounding boundary, so an element may be
    # one float16 step off; the float16 arithmetic of before was off for most elements
    x = np.random.default_rng(2).standard_normal((32, 10)) * 3
    fn = lambda m, t: m.nn.functional.softmax(t, -1)  # noqa: E731
    want = _results(torch, fn, [x])
    with entered(spec):
        got = _results(tw, fn, [x])
    for w, g in zip(want, got):
        steps = _ulps(g, w)
        assert steps.max() <= 1 and np.count_nonzero(steps) <= w.size // 50, steps


@pytest.mark.parametrize("spec", FAST)
def test_float16_attention_rounds_once_as_torch(spec: str) -> None:
    # one block of torch's CPU attention kernel (float32 throughout, rounded once); before:
    # 37 of 64 outputs and 33-45 of 64 elements of each gradient differed on NumPy. (Longer
    # sequences go through torch's blocked online softmax, which rounds otherwise.)
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal((2, 4, 8)) for _ in range(3)]
    fn = lambda m, q, k, v: m.nn.functional.scaled_dot_product_attention(q, k, v)  # noqa: E731
    want = _results(torch, fn, arrays)
    with entered(spec):
        got = _results(tw, fn, arrays)
    for w, g in zip(want, got):
        steps = _ulps(g, w)
        assert steps.max() <= 1 and np.count_nonzero(steps) <= w.size // 50, steps
