"""scaled_dot_product_attention on torch:cpu calls torch's CPU flash kernel and its backward
directly where torch would run that kernel (no recorded graph to replay): values and
gradients bit for bit torch's eager ones, with float masks, causal or not, float32 and
float64; a bool mask and torch's ``sdpa_kernel`` choice still go through torch's dispatch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from tw_backends import entered


def _inputs(seed: int, dtype: str) -> tuple:
    g = np.random.default_rng(seed)
    q, k, v = (g.standard_normal((3, 2, 7, 8)).astype(dtype) for _ in range(3))
    mask = np.triu(np.full((7, 7), -np.inf, dtype), 1) + g.standard_normal((7, 7)).astype(dtype)
    grad = g.standard_normal((3, 2, 7, 8)).astype(dtype)
    return q, k, v, mask, grad


def _attend(m: Any, arrays: tuple, mask: str, causal: bool) -> list:
    q, k, v, float_mask, grad = arrays
    leaves = [m.tensor(a, requires_grad=True) for a in (q, k, v)]
    attn_mask = {
        "none": None,
        "float": m.tensor(float_mask),
        "bool": m.tensor(np.isfinite(float_mask)),
    }[mask]
    out = m.nn.functional.scaled_dot_product_attention(
        *leaves, attn_mask=attn_mask, is_causal=causal, scale=0.3
    )
    out.backward(m.tensor(grad))
    return [np.asarray(t.tolist()) for t in (out.detach(), *(x.grad for x in leaves))]


@pytest.mark.parametrize("dtype", ("float32", "float64"))
@pytest.mark.parametrize(("mask", "causal"), (("none", True), ("float", False), ("bool", False)))
def test_values_and_gradients_bit_for_bit_torch(dtype: str, mask: str, causal: bool) -> None:
    arrays = _inputs(1, dtype)
    theirs = _attend(torch, arrays, mask, causal)
    with entered("torch:cpu"):
        ours = _attend(tw, arrays, mask, causal)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


def test_flash_path_replays_no_torch_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    replays = []
    real = torch.autograd.grad
    monkeypatch.setattr(torch.autograd, "grad", lambda *a, **k: replays.append(1) or real(*a, **k))
    arrays = _inputs(2, "float32")
    with entered("torch:cpu"):
        _attend(tw, arrays, "float", False)
    assert not replays  # (the recorded graph's replay called torch.autograd.grad)


def test_torch_kernel_choice_is_respected() -> None:
    arrays = _inputs(3, "float64")
    with sdpa_kernel(SDPBackend.MATH):
        theirs = _attend(torch, arrays, "float", False)
        with entered("torch:cpu"):
            ours = _attend(tw, arrays, "float", False)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
