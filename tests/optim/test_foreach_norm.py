"""The optional ``foreach_norm`` primitive and ``clip_grad_norm_``'s use of it: each norm
against NumPy float64, bit for bit against the core's norm on NumPy (the same ufuncs in the
same order), and the clipped gradients against ``torch.nn.utils`` with each ``foreach``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import nn

torch = pytest.importorskip("torch")

ORDERS = [2.0, 1.0, math.inf]
SHAPES = [(3, 4), (5,), (), (2, 3, 2)]


def _arrays(device: str, dtype: Any, seed: int = 0) -> list[tw.Tensor]:
    """Gradients of SHAPES, one of them a transposed (non-contiguous) view."""
    rng = np.random.default_rng(seed)
    ts = [tw.tensor(rng.standard_normal(s), dtype=dtype, device=device) for s in SHAPES]
    ts[0] = ts[0].T
    return ts


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
@pytest.mark.parametrize("ord", ORDERS)
def test_foreach_norm_matches_numpy(device: str, ord: float) -> None:
    ts = _arrays(device, tw.float64)
    backend = ts[0].backend
    norms = backend.foreach_norm([t.native for t in ts], ord)
    for t, n in zip(ts, norms):
        got = tw.Tensor(n, backend, tw.float64)
        assert got.shape == ()
        expected = np.linalg.norm(np.asarray(t).reshape(-1), ord)
        np.testing.assert_allclose(float(got), expected, rtol=1e-14)


@pytest.mark.parametrize("ord", ORDERS)
@pytest.mark.parametrize("dtype", [tw.float32, tw.float64], ids=["f32", "f64"])
def test_numpy_foreach_norm_is_the_cores_norm_bit_for_bit(ord: float, dtype: Any) -> None:
    ts = _arrays("numpy", dtype, seed=1)
    backend = ts[0].backend
    for t, n in zip(ts, backend.foreach_norm([t.native for t in ts], ord)):
        assert np.asarray(n).dtype == np.asarray(t).dtype
        assert np.asarray(n).tobytes() == np.asarray(t.norm(ord)).tobytes()


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_foreach_norm_propagates_nan(device: str) -> None:
    t = tw.tensor([1.0, float("nan"), 2.0], device=device)
    for ord in ORDERS:
        (n,) = t.backend.foreach_norm([t.native], ord)
        assert math.isnan(float(tw.Tensor(n, t.backend, t.dtype)))


def _clip_pair(device: str, seed: int) -> tuple[list[nn.Parameter], list[Any]]:
    """Parameters with float64 and float32 gradients (two groups), one without a gradient."""
    rng = np.random.default_rng(seed)
    ours, theirs = [], []
    for i, shape in enumerate(SHAPES):
        grad = rng.standard_normal(shape) * 3.0
        dtype, tdtype = (tw.float32, torch.float32) if i == 1 else (tw.float64, torch.float64)
        p = nn.Parameter(tw.zeros(shape, dtype=dtype, device=device))
        q = torch.nn.Parameter(torch.zeros(shape, dtype=tdtype))
        p.grad, q.grad = (
            tw.tensor(grad, dtype=dtype, device=device),
            torch.tensor(grad, dtype=tdtype),
        )
        ours.append(p)
        theirs.append(q)
    ours.append(nn.Parameter(tw.zeros(2, dtype=tw.float64, device=device)))
    theirs.append(torch.nn.Parameter(torch.zeros(2, dtype=torch.float64)))
    return ours, theirs


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
@pytest.mark.parametrize("ord", [*ORDERS, 3.0])
@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_norm_foreach_like_torch(device: str, ord: float, foreach: Any) -> None:
    ours, theirs = _clip_pair(device, seed=2)
    total = nn.utils.clip_grad_norm_(ours, 0.5, ord, foreach=foreach)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 0.5, ord, foreach=foreach)
    assert total.dtype.name == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_allclose(float(total), float(expected), rtol=1e-6)
    for p, q in zip(ours, theirs):
        assert (p.grad is None) == (q.grad is None)
        if q.grad is not None:
            assert p.grad.dtype.name == str(q.grad.dtype).removeprefix("torch.")
            np.testing.assert_allclose(np.asarray(p.grad), q.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
@pytest.mark.parametrize("ord", ORDERS)
def test_foreach_and_per_tensor_norms_agree(device: str, ord: float) -> None:
    grads = _arrays(device, tw.float64, seed=3)
    fast = nn.utils.get_total_norm(grads, ord, foreach=True)
    slow = nn.utils.get_total_norm(grads, ord, foreach=False)
    if device == "numpy":
        assert np.asarray(fast).tobytes() == np.asarray(slow).tobytes()
    else:
        np.testing.assert_allclose(float(fast), float(slow), rtol=1e-14)


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
@pytest.mark.parametrize("foreach", [None, True, False])
def test_nonfinite_norm_raises_like_torch(device: str, foreach: Any) -> None:
    p = nn.Parameter(tw.zeros(3, dtype=tw.float64, device=device))
    p.grad = tw.tensor([1.0, float("inf"), 2.0], dtype=tw.float64, device=device)
    q = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    q.grad = torch.tensor([1.0, float("inf"), 2.0], dtype=torch.float64)
    with pytest.raises(RuntimeError, match="non-finite"):
        torch.nn.utils.clip_grad_norm_(q, 1.0, error_if_nonfinite=True, foreach=foreach)
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True, foreach=foreach)
    total = nn.utils.clip_grad_norm_(p, 1.0, foreach=foreach)  # clips by the inf norm
    expected = torch.nn.utils.clip_grad_norm_(q, 1.0, foreach=foreach)
    assert math.isinf(float(total)) and math.isinf(float(expected))
    np.testing.assert_array_equal(np.asarray(p.grad), q.grad.numpy())
