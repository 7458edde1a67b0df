"""ReLU's gradient at NaN is the incoming gradient, as torch's ``threshold_backward`` (zero
only where the output is <= 0); the core's rule gave 0 there (NumPy, and every backend under
``create_graph``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import torch

ROW = [math.nan, 1.5, -1.0, 0.0, -0.0, math.inf, -math.inf]


@pytest.mark.cunumeric
@pytest.mark.parametrize("create_graph", [False, True])
def test_relu_gradient_at_nan_like_torch(backend: str, create_graph: bool) -> None:
    grads = []
    for m in (tw, torch):
        x = m.tensor(ROW, dtype=m.float64, requires_grad=True)
        weights = m.arange(1, len(ROW) + 1, dtype=m.float64)
        (g,) = m.autograd.grad((m.relu(x) * weights).sum(), x, create_graph=create_graph)
        grads.append(np.asarray(g.detach()))
    np.testing.assert_array_equal(*grads)
