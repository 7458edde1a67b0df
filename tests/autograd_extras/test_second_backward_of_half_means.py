"""A second backward through a half-precision mean runs as torch's (MeanBackward keeps the
element count, no tensor): the mean sums in float32 and casts back, and the division's node
freed its divisor, so the second backward raised. The gradients add up as torch's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw

torch = pytest.importorskip("torch")

CASES = {
    "mean": lambda x: x.mean(),
    "mean_dim": lambda x: x.mean(0),
    "mean_keepdim": lambda x: x.mean(1, keepdim=True).sum(),
}


def _grads(m: Any, dtype: str, case: str, device: str | None) -> np.ndarray:
    with tw.device(device or "numpy"):
        x = m.tensor(np.arange(6.0).reshape(2, 3), dtype=getattr(m, dtype), requires_grad=True)
    y = CASES[case](x)
    gradient = m.ones_like(y)
    y.backward(gradient)
    y.backward(gradient)  # nothing saved that the first one freed
    return x.grad.float().numpy()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(
    ("device", "dtype"),
    [("numpy", "float16"), ("torch:cpu", "float16"), ("torch:cpu", "bfloat16")],
)
def test_second_backward_of_a_half_mean_like_torch(device: str, dtype: str, case: str) -> None:
    np.testing.assert_array_equal(_grads(tw, dtype, case, device), _grads(torch, dtype, case, None))
