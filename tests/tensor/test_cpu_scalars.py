"""A 0-d tensor on a CPU meets a tensor on another device, as PyTorch lets a CPU scalar
tensor meet a CUDA tensor; any other mix of devices is an error naming both."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw


def test_cpu_scalar_joins_the_other_device_with_gradients() -> None:
    x = tw.tensor([1.0, 2.0, 3.0], device="torch:cpu", requires_grad=True)
    s = tw.tensor(2.0, device="numpy", requires_grad=True)
    y = (x * s).sum() + (s - x).sum() + (x / s).sum()
    assert y.device == "torch:cpu"
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 - 1 + 0.5] * 3)
    assert s.grad.device == "numpy"  # each leaf's gradient lives where the leaf does
    np.testing.assert_allclose(s.grad.numpy(), 6.0 + 3.0 - 6.0 / 4.0)
    assert (x > tw.tensor(1.5)).device == "torch:cpu"


def test_tensors_with_dimensions_on_two_devices_still_fail() -> None:
    with pytest.raises(RuntimeError, match="one device.*torch:cpu.*numpy|one device.*numpy.*torch"):
        tw.ones(2, device="numpy") + tw.ones(2, device="torch:cpu")
    with pytest.raises(RuntimeError, match="one device"):
        tw.ones(1, device="numpy") * tw.ones(2, device="torch:cpu")
