"""``add_``/``sub_`` with ``alpha`` (one ``foreach_add`` call where the operands allow):
bit for bit the out-of-place ``add``/``sub`` on NumPy, PyTorch's values on torch:cpu, and
the in-place semantics (writes through ``.data`` and host-shared memory, autograd's guard)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch

rng = np.random.default_rng(0)


@pytest.mark.parametrize("name", ["add", "sub"])
@pytest.mark.parametrize("alpha", [-20.0, 0.3, 3])
@pytest.mark.parametrize("dtype", [tw.float32, tw.float64, tw.float16], ids=str)
def test_numpy_in_place_is_out_of_place_bit_for_bit(name: str, alpha: Any, dtype: Any) -> None:
    a, b = rng.standard_normal((2, 6, 5))
    x, y = tw.tensor(a, dtype=dtype), tw.tensor(b, dtype=dtype)
    expected = getattr(tw, name)(x, y, alpha=alpha)
    assert getattr(x, name + "_")(y, alpha=alpha) is x
    assert np.asarray(x).tobytes() == np.asarray(expected).tobytes()


@pytest.mark.parametrize("name", ["add", "sub"])
def test_torch_in_place_like_torch(name: str) -> None:
    a, b = rng.standard_normal((2, 6, 5))
    x, y = tw.tensor(a, device="torch:cpu"), tw.tensor(b, device="torch:cpu")
    getattr(x, name + "_")(y, alpha=-0.7)
    expected = getattr(torch.tensor(a), name + "_")(torch.tensor(b), alpha=-0.7)
    np.testing.assert_allclose(np.asarray(x), expected.numpy(), rtol=1e-15, atol=0)


def test_update_through_data_reaches_the_parameter(backend: str) -> None:
    p = tw.nn.Parameter(tw.tensor(rng.standard_normal(4), device=backend))
    p.grad = tw.tensor(rng.standard_normal(4), device=backend)
    expected = np.asarray(p.detach()) - 2.0 * np.asarray(p.grad)
    p.data.add_(p.grad, alpha=-2.0)
    np.testing.assert_allclose(np.asarray(p.detach()), expected, rtol=1e-15)
    assert p.requires_grad and p.is_leaf


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_write_reaches_shared_numpy_memory(device: str) -> None:
    host = rng.standard_normal(5)
    expected = host + 0.5 * 3.0
    with tw.device(device):
        t = tw.from_numpy(host)
        t.add_(tw.full((5,), 3.0, dtype=tw.float64), alpha=0.5)
    np.testing.assert_allclose(host, expected, rtol=1e-15)
    np.testing.assert_array_equal(np.asarray(t), host)


def test_leaf_requiring_grad_still_refuses_in_place(backend: str) -> None:
    p = tw.tensor([1.0, 2.0], device=backend, requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place"):
        p.add_(tw.ones(2, device=backend), alpha=2.0)
    with tw.no_grad():
        p.sub_(tw.ones(2, device=backend), alpha=2.0)
    np.testing.assert_array_equal(np.asarray(p.detach()), [-1.0, 0.0])


def test_in_place_on_a_non_leaf_keeps_the_gradient(backend: str) -> None:
    x = tw.tensor([1.0, 2.0], device=backend, requires_grad=True)
    y = tw.tensor([3.0, 4.0], device=backend, requires_grad=True)
    z = x * 1.0
    z.sub_(y, alpha=3.0)
    z.sum().backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(y.grad), [-3.0, -3.0])
