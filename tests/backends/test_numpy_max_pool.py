"""Max pooling on the NumPy backend (its fused max_pool2d, max_pool and
max_pool_with_indices) against PyTorch: values, indices and gradients, in float64 and
float32, on inputs with ties, NaN and whole windows of -inf, over padding, strides other
than the kernel, dilation and ceil_mode, in 1, 2 and 3 dimensions.

PyTorch's CPU kernels scan a window's elements inside the input in row-major order and
move to an element that is greater or NaN: the gradient goes to the first maximum, to the
last NaN of a window holding one, and to the first element inside the input of a window of
-inf only.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import torch
from tensorweaver_numpy.backend import NumpyBackend

# (kernel, stride, padding, dilation, ceil_mode) per rank
CASES = {
    1: [(2, 2, 0, 1, False), (3, 1, 1, 1, False), (3, 2, 1, 2, True), (2, 3, 1, 1, True)],
    2: [
        ((2, 2), (2, 2), (0, 0), (1, 1), False),
        ((3, 3), (1, 1), (1, 1), (1, 1), False),
        ((3, 2), (2, 1), (1, 0), (1, 1), False),
        ((2, 3), (2, 2), (1, 1), (2, 1), True),
        ((3, 3), (3, 2), (1, 0), (1, 1), True),
    ],
    3: [
        ((2, 2, 2), (2, 2, 2), (0, 0, 0), (1, 1, 1), False),
        ((3, 2, 2), (2, 1, 2), (1, 1, 0), (1, 2, 1), True),
    ],
}
SHAPES = {1: (2, 3, 11), 2: (2, 3, 7, 8), 3: (1, 2, 5, 6, 5)}
PARAMS = [(nd, *case) for nd, cases in CASES.items() for case in cases]


def tricky_input(rng: np.random.Generator, nd: int) -> np.ndarray:
    """Small integers (many ties), some NaN, some -inf, and a corner block all -inf."""
    x = rng.integers(0, 3, size=SHAPES[nd]).astype(np.float64)
    x.flat[rng.choice(x.size, x.size // 12, replace=False)] = np.nan
    x.flat[rng.choice(x.size, x.size // 12, replace=False)] = -np.inf
    x[(Ellipsis, *([slice(0, 3)] * nd))] = -np.inf
    return x


def upstream(rng: np.random.Generator, shape: tuple, special: bool) -> np.ndarray:
    g = rng.normal(size=shape)
    if special:  # inf and NaN gradients must reach their element and no other
        g.flat[::7] = np.inf
        g.flat[3::11] = np.nan
    return g


def pool(lib, nd: int, x, case: tuple, indices: bool):
    kernel, stride, padding, dilation, ceil_mode = case
    fn = getattr(lib.nn.functional, f"max_pool{nd}d")
    return fn(x, kernel, stride, padding, dilation, ceil_mode, indices)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("indices", [False, True])
@pytest.mark.parametrize("nd, kernel, stride, padding, dilation, ceil_mode", PARAMS)
def test_max_pool_matches_torch(nd, kernel, stride, padding, dilation, ceil_mode, indices, dtype):
    rng = np.random.default_rng(nd * 100 + len(str(kernel)) + int(ceil_mode))
    case = (kernel, stride, padding, dilation, ceil_mode)
    x = tricky_input(rng, nd).astype(dtype)
    xt = torch.tensor(x, requires_grad=True)
    xw = tw.tensor(x, device="numpy", requires_grad=True)
    want, got = pool(torch, nd, xt, case, indices), pool(tw, nd, xw, case, indices)
    if indices:
        (want, want_i), (got, got_i) = want, got
        np.testing.assert_array_equal(got_i.numpy(), want_i.numpy())
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    for special in (False, True):
        g = upstream(rng, tuple(want.shape), special).astype(dtype)
        (gt,) = torch.autograd.grad(want, xt, torch.tensor(g), retain_graph=True)
        (gw,) = tw.autograd.grad(got, xw, tw.tensor(g, device="numpy"), retain_graph=True)
        # overlapping windows add in another order than PyTorch's: rounding only
        rtol = 1e-12 if dtype == "float64" else 1e-5
        np.testing.assert_allclose(gw.numpy(), gt.numpy(), rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("kernel, stride", [((2, 2), (2, 2)), ((3, 3), (2, 2))])
def test_max_pool2d_fused_gradient_of_a_relu_map_like_torch(kernel, stride):
    """The CNN case: a ReLU's output (ties at zero everywhere) pooled, float32."""
    rng = np.random.default_rng(5)
    x = np.maximum(rng.normal(size=(4, 3, 12, 12)), 0).astype(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    xw = tw.tensor(x, device="numpy", requires_grad=True)
    want, got = F.max_pool2d(xw, kernel, stride), torch.nn.functional.max_pool2d(xt, kernel, stride)
    np.testing.assert_array_equal(want.detach().numpy(), got.detach().numpy())
    g = rng.normal(size=tuple(got.shape)).astype(np.float32)
    want.backward(tw.tensor(g, device="numpy"))
    got.backward(torch.tensor(g))
    np.testing.assert_allclose(xw.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=0)


@pytest.mark.parametrize("case", CASES[2][:2])
def test_an_empty_batch_pools_like_torch(case):
    shape = (0, 3, 4, 6)
    x = np.zeros(shape)
    xt = torch.tensor(x, requires_grad=True)
    xw = tw.tensor(x, device="numpy", requires_grad=True)
    (want, want_i), (got, got_i) = pool(torch, 2, xt, case, True), pool(tw, 2, xw, case, True)
    assert tuple(got.shape) == tuple(want.shape) and tuple(got_i.shape) == tuple(want_i.shape)
    got.sum().backward()
    assert tuple(xw.grad.shape) == shape


def test_the_numpy_backend_fuses_every_max_pool():
    for name in ("max_pool2d", "max_pool", "max_pool_with_indices"):
        assert callable(getattr(NumpyBackend, f"fused_{name}", None)), name
        assert callable(getattr(NumpyBackend, f"fused_{name}_backward", None)), name
