"""Comparing TensorWeaver results with their PyTorch twins: both as NumPy arrays, then
equal shapes and values within float64 tolerances."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorweaver as tw
import torch

RTOL = 1e-9
ATOL = 1e-10


def host(x: Any) -> np.ndarray:
    """A tw or torch tensor (or array) as a NumPy array."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, tw.Tensor):
        return x.detach().numpy()
    return np.asarray(x)


def assert_close(actual: Any, expected: Any, rtol: float = RTOL, atol: float = ATOL) -> None:
    a, e = host(actual), host(expected)
    assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)
