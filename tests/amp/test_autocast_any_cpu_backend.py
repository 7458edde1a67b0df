"""``tw.autocast("cpu", ...)`` holds for every CPU backend, as PyTorch's one CPU: entering never
checks the current backend's dtypes (NumPy, the default, has no bfloat16), a model on
torch:cpu computes as under ``torch.autocast("cpu")``, and an op on a backend without the
dtype raises where it casts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch

RS = np.random.RandomState(0)
X, WEIGHT, BIAS = (RS.randn(*shape).astype(np.float32) for shape in ((4, 3), (2, 3), (2,)))


def linear_under_autocast(m: Any, low: str, device: Any = None) -> tuple:
    layer = m.nn.Linear(3, 2)
    with m.no_grad():
        layer.weight.copy_(m.tensor(WEIGHT))
        layer.bias.copy_(m.tensor(BIAS))
    x = m.tensor(X)
    if device is not None:
        layer, x = layer.to(device), x.to(device)
    with m.autocast("cpu", dtype=getattr(m, low)):
        out = layer(x)
        plain = x + 1  # not on the lower-precision list: its own dtype
    return np.asarray(out.detach().float()), str(out.dtype), str(plain.dtype)


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_a_model_on_torch_cpu_under_cpu_autocast_with_numpy_current(low: str) -> None:
    """(Entering raised ValueError before: the current backend, NumPy, has no bfloat16.)"""
    assert str(tw.get_backend()).startswith("numpy")
    got = linear_under_autocast(tw, low, "torch:cpu")
    expected = linear_under_autocast(torch, low)
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[1:] == tuple(s.replace("torch", "tensorweaver") for s in expected[1:])


def test_entering_and_ops_that_do_not_cast_never_raise() -> None:
    with tw.autocast("cpu"):
        assert tw.is_autocast_enabled("cpu") and tw.get_autocast_dtype("cpu") is tw.bfloat16
        assert (tw.ones(2) * 3).dtype is tw.float32
    assert not tw.is_autocast_enabled("cpu")


def test_float16_on_numpy_computes_as_torch() -> None:
    got, expected = linear_under_autocast(tw, "float16"), linear_under_autocast(torch, "float16")
    np.testing.assert_allclose(got[0], expected[0], rtol=2e-3, atol=2e-3)
    assert got[1:] == tuple(s.replace("torch", "tensorweaver") for s in expected[1:])


def test_an_op_on_a_backend_without_the_dtype_raises_where_it_casts() -> None:
    layer = tw.nn.Linear(3, 2)
    with tw.autocast("cpu", dtype=tw.bfloat16):
        with pytest.raises(TypeError, match="numpy.*has no bfloat16"):
            layer(tw.tensor(X))
    assert layer(tw.tensor(X)).dtype is tw.float32  # the block left nothing behind


def test_a_named_device_without_the_dtype_is_still_refused_on_entering() -> None:
    with pytest.raises(ValueError, match="not available on numpy"):
        with tw.autocast("bf16", device="numpy"):
            pass
