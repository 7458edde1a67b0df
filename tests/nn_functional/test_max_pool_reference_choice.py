"""The core's max-pool decomposition (what a backend without a fused max pool runs, e.g.
cuPyNumeric) picks the element PyTorch's CPU kernels pick: the first maximum of a window,
the last NaN where the window holds NaN, and the first element inside the input where every
element is -inf (never a padding cell, where a gradient would be lost)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.ops.fusion import reference_only
from tw_backends import entered

NAN, INF = math.nan, math.inf

CASES = [
    # (input row, kernel, stride, padding)
    ([1.0, NAN, 3.0, NAN], 4, 4, 0),
    ([NAN, 2.0, NAN, 1.0, 5.0, 5.0], 3, 3, 0),
    ([-INF, -INF, 2.0, -INF], 2, 2, 1),
    ([-INF, -INF, -INF, -INF, -INF], 3, 2, 1),
    ([4.0, 4.0, 1.0, 4.0], 2, 1, 1),
]


def _pooled(m, row, kernel, stride, padding, dims):
    x = m.tensor(row, dtype=m.float64).reshape(1, 1, -1)
    if dims == 2:
        x = m.stack([x, x.flip(-1)], dim=2)  # (1, 1, 2, L)
        kernel, stride, padding = (1, kernel), (1, stride), (0, padding)
    x.requires_grad_()
    pool = m.nn.functional.max_pool1d if dims == 1 else m.nn.functional.max_pool2d
    out, idx = pool(x, kernel, stride, padding, return_indices=True)
    weights = m.arange(1, out.numel() + 1, dtype=m.float64).reshape(out.shape)
    (out.nan_to_num(0.0) * weights).sum().backward()
    return out, idx, x.grad


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_reference_max_pool_chooses_like_torch(backend: str, case: tuple, dims: int) -> None:
    want = [np.asarray(t.detach()) for t in _pooled(torch, *case, dims)]
    with reference_only():
        got = [np.asarray(t.detach()) for t in _pooled(tw, *case, dims)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("case", [CASES[0], CASES[3]], ids=str)
def test_cunumeric_max_pool_chooses_like_torch(case: tuple) -> None:
    # cuPyNumeric has no fused max pool: the decomposition is what it always runs
    want = [np.asarray(t.detach()) for t in _pooled(torch, *case, 1)]
    with entered("cunumeric"):
        got = [np.asarray(t.detach()) for t in _pooled(tw, *case, 1)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
