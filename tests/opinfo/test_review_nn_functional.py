"""Review of the op database fixes in ``tw.nn.functional`` (commit 53353e1): cases its fixes
left unlike torch 2.13, each failing before; every answer is compared with torch itself."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import torch
import torch.nn.functional as TF

_DEVICES = ["numpy", "torch:cpu"]


def _outcome(fn):
    """``fn()``'s value as float64 NumPy with its dtype's name, or its exception's class."""
    try:
        y = fn()
    except Exception as e:  # the class is what is compared
        return type(e)
    name = str(y.dtype).split(".")[-1]
    return name, tuple(y.shape), np.asarray(y.detach().double())


def _batch_norm(lib, shape, training: bool, stats: bool, affine: bool):
    channels = shape[1] if len(shape) > 1 else 0
    rm = lib.zeros(channels) if stats else None
    rv = lib.ones(channels) if stats else None
    w = lib.full((channels,), 2.0) if affine else None
    b = lib.ones(channels) if affine else None
    fn = TF.batch_norm if lib is torch else F.batch_norm

    def run():
        y = fn(lib.ones(shape), rm, rv, w, b, training)
        return y if rm is None else lib.cat([y.reshape(-1), rm, rv])

    return run


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 4), (4, 0), (4, 0, 5), (0,), (3,)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("stats", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_of_empty_and_1d_inputs_as_torch(
    device: str, shape, training: bool, stats: bool, affine: bool
) -> None:
    # Before: (4, 0) with a weight went through where torch raises IndexError (weight[0] of
    # an empty weight); (0, 3) in eval without running statistics raised RuntimeError where
    # torch returns the empty input; (3,) in eval without them raised IndexError where torch
    # raises RuntimeError (it asks for the running statistics first).
    expected = _outcome(_batch_norm(torch, shape, training, stats, affine))
    with tw.device(device):
        got = _outcome(_batch_norm(tw, shape, training, stats, affine))
    if isinstance(expected, type):
        assert got is expected
    else:
        assert got[:2] == expected[:2]
        np.testing.assert_array_equal(got[2], expected[2])


@pytest.mark.parametrize("device", _DEVICES)
def test_batch_norm_of_an_empty_batch_keeps_the_gradient_chain(device: str) -> None:
    x, w = torch.ones(0, 3, requires_grad=True), torch.full((3,), 2.0, requires_grad=True)
    TF.batch_norm(x, None, None, w, None, True).sum().backward()
    with tw.device(device):
        ours_x, ours_w = tw.ones(0, 3, requires_grad=True), tw.full((3,), 2.0, requires_grad=True)
        F.batch_norm(ours_x, None, None, ours_w, None, True).sum().backward()
    np.testing.assert_array_equal(np.asarray(ours_w.grad), w.grad.numpy())
    assert tuple(ours_x.grad.shape) == tuple(x.grad.shape)


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, float("inf")])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance_of_integers_with_an_int_eps(device: str, p: float, keepdim) -> None:
    # Before: an int eps kept integer inputs int64 (p = 0, 1 and inf) where torch's eps is
    # a double and the distance is float32.
    a, b = np.array([[1, 2, 3], [4, 5, 6]]), np.array([[1, 0, 3], [0, 5, 9]])
    expected = TF.pairwise_distance(torch.tensor(a), torch.tensor(b), p, 2, keepdim)
    with tw.device(device):
        got = F.pairwise_distance(tw.tensor(a), tw.tensor(b), p, 2, keepdim)
    assert got.dtype.name == str(expected.dtype).split(".")[1]
    np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    ("device", "dtype"), [("numpy", "float16"), ("torch:cpu", "float16"), ("torch:cpu", "bfloat16")]
)
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_half_antialiased_interpolate_raises_as_torch_on_the_cpu(device, dtype, mode) -> None:
    # Before: resampling half inputs in float32 computed what torch's CPU kernel refuses
    # (NotImplementedError); numpy computed it before the float32 change too.
    with pytest.raises(NotImplementedError):
        TF.interpolate(
            torch.ones(1, 2, 7, 9, dtype=getattr(torch, dtype)), (4, 5), None, mode, antialias=True
        )
    with tw.device(device), pytest.raises(NotImplementedError, match="compute_index_ranges"):
        F.interpolate(
            tw.ones(1, 2, 7, 9, dtype=getattr(tw, dtype)), (4, 5), None, mode, antialias=True
        )


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.parametrize("shape", [(1,), (1, 0), (1, 0, 1), (1, 3), (0,), (3,)])
@pytest.mark.parametrize("eps", [1e-5, 0.0, -1.0])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_checks_in_torch_order(device: str, shape, eps: float, training) -> None:
    # Before: (1, 0) in training returned the empty input where torch's batch-size check
    # raises ValueError first, and (1,) raised IndexError there.
    def run(lib, fn):
        return lambda: fn(lib.ones(shape), None, None, None, None, training, 0.1, eps)

    expected = _outcome(run(torch, TF.batch_norm))
    with tw.device(device):
        got = _outcome(run(tw, F.batch_norm))
    if isinstance(expected, type):
        assert got is expected
    else:
        assert got[:2] == expected[:2]


_RESAMPLERS = {
    "bicubic": lambda M, x: M.interpolate(x[..., 0], size=(7, 3), mode="bicubic"),
    "trilinear": lambda M, x: M.interpolate(x, size=(7, 3, 4), mode="trilinear"),
    "adaptive_avg_pool3d": lambda M, x: M.adaptive_avg_pool3d(x, (3, 4, 2)),
}


@pytest.mark.parametrize("name", list(_RESAMPLERS))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_resampling_on_torch_keeps_torchs_own_kernel(name: str, dtype: str) -> None:
    # Before: half inputs went through float32 before torch's fused kernel, which rounds
    # differently from torch's half kernel (trilinear bfloat16: -0.1416 where torch -0.1553).
    x = torch.randn(2, 3, 5, 6, 7, generator=torch.Generator().manual_seed(0)) * 4
    expected = _RESAMPLERS[name](TF, x.to(getattr(torch, dtype)))
    with tw.device("torch:cpu"):
        got = _RESAMPLERS[name](F, tw.tensor(x.numpy()).to(getattr(tw, dtype)))
    np.testing.assert_array_equal(np.asarray(got.double()), expected.double().numpy())
