"""Helpers for the linalg tests: well-conditioned inputs, and one call that runs a function on
tensorweaver and on PyTorch and compares the values and the gradients."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tensorweaver as tw
import torch
from tensor_reference import host

TOLERANCE = {"float64": 1e-8, "float32": 2e-4}


def matrices(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Random matrices; square ones are shifted to be comfortably invertible."""
    a = np.random.default_rng(seed).standard_normal(shape)
    if shape[-1] == shape[-2]:
        a = a + 3 * np.eye(shape[-1])
    return a


def spd(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Random symmetric positive-definite matrices."""
    a = np.random.default_rng(seed).standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _leaves(m: Any, arrays: tuple, dtype: str, grad: bool) -> list:
    return [m.tensor(a, dtype=getattr(m, dtype), requires_grad=grad) for a in arrays]


def _host(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    if isinstance(x, tuple):
        return tuple(_host(y) for y in x)
    return host(x.detach())


def _close(ours: Any, theirs: Any, tol: float, what: str) -> None:
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs), what
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _close(a, b, tol, f"{what}[{i}]")
        return
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, PyTorch {theirs.shape}"
    scale = max(1.0, float(np.max(np.abs(theirs), initial=0.0)))
    np.testing.assert_allclose(ours, theirs, atol=tol * scale, rtol=tol, err_msg=what)


def compare(
    fn: Callable[..., Any],
    *arrays: np.ndarray,
    dtype: str = "float64",
    grad: bool = True,
    tol: float | None = None,
) -> Any:
    """``fn(m, *tensors)`` on tensorweaver and PyTorch: equal values (and, with ``grad``, equal
    gradients of a random weighting of the output, which must then be one tensor). Returns
    our output."""
    tol = TOLERANCE[dtype] if tol is None else tol
    results = []
    for m in (tw, torch):
        leaves = _leaves(m, arrays, dtype, grad)
        out = fn(m, *leaves)
        grads = None
        if grad:
            weights = np.random.default_rng(7).standard_normal(tuple(out.shape))
            (out * m.tensor(weights, dtype=out.dtype)).sum().backward()
            grads = tuple(
                _host(x.grad) if x.grad is not None else np.zeros(x.shape) for x in leaves
            )
        results.append((out, _host(out), grads))
    (ours, ours_host, ours_grads), (_, theirs_host, theirs_grads) = results
    _close(ours_host, theirs_host, tol, "value")
    if grad:
        _close(ours_grads, theirs_grads, 10 * tol, "gradient")
    return ours
