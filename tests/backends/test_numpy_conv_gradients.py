"""The NumPy backend's fused conv2d gradients against PyTorch, in float64 and float32: the
stride-1 input gradient (rows widened to the padded width, samples a block at a time),
the strided one, and the bias gradient (per-plane sums through BLAS)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import torch
from tensorweaver_numpy import fused

# (input shape, weight shape, stride, padding, dilation, groups)
CASES = [
    ((3, 4, 9, 8), (6, 4, 3, 3), (1, 1, 1, 1)),
    ((2, 4, 10, 9), (6, 2, 3, 2), (1, (2, 0), (2, 3), 2)),
    ((2, 3, 7, 7), (5, 3, 1, 1), (1, 0, 1, 1)),
    ((2, 3, 9, 8), (4, 3, 3, 3), (2, 1, 1, 1)),
    ((2, 2, 8, 11), (3, 2, 2, 3), ((1, 2), (1, 0), 1, 1)),
]


def gradients(lib, x, w, b, g, case):
    stride, padding, dilation, groups = case
    tensor = (lambda a: tw.tensor(a, device="numpy")) if lib is tw else torch.tensor
    xs, ws, bs = (tensor(a).requires_grad_() for a in (x, w, b))
    fn = F.conv2d if lib is tw else torch.nn.functional.conv2d
    out = fn(xs, ws, bs, stride, padding, dilation, groups)
    out.backward(tensor(g))
    return [out.detach().numpy(), xs.grad.numpy(), ws.grad.numpy(), bs.grad.numpy()]


@pytest.mark.parametrize("block", [1 << 20, 1])  # one block, and one sample a block
@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-10), ("float32", 2e-4)])
@pytest.mark.parametrize("x_shape, w_shape, case", CASES)
def test_conv2d_gradients_match_torch(x_shape, w_shape, case, dtype, rtol, block, monkeypatch):
    monkeypatch.setattr(fused, "_BLOCK_BYTES", block)
    rng = np.random.default_rng(len(CASES) + sum(x_shape))
    x = rng.normal(size=x_shape).astype(dtype)
    w = rng.normal(size=w_shape).astype(dtype)
    b = rng.normal(size=w_shape[0]).astype(dtype)
    want_out = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), *case)
    g = rng.normal(size=tuple(want_out.shape)).astype(dtype)
    got = gradients(tw, x, w, b, g, case)
    want = gradients(torch, x, w, b, g, case)
    for name, a, e in zip(("output", "input", "weight", "bias"), got, want):
        np.testing.assert_allclose(a, e, rtol=rtol, atol=rtol * 10, err_msg=name)


def test_an_infinite_weight_gives_torchs_infinities_and_no_nan():
    """Widened rows carry zeros; an infinite weight times such a zero would be NaN where
    the convolution has no product at all, so those weights take the plain way."""
    rng = np.random.default_rng(3)
    x, g = rng.normal(size=(2, 2, 6, 6)), rng.normal(size=(2, 3, 6, 6))
    w, b = rng.normal(size=(3, 2, 3, 3)), rng.normal(size=3)
    w[1, 0, 0, 2] = np.inf
    case = (1, 1, 1, 1)
    got, want = gradients(tw, x, w, b, g, case), gradients(torch, x, w, b, g, case)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10, equal_nan=True)
    assert np.isinf(want[1]).any() and not np.isnan(want[1]).any()
