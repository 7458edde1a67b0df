"""Gradient checks by central differences in float64.

``gradcheck(fn, *inputs)`` makes each float64 host array a leaf tensor on the current
device, calls ``backward`` on ``fn``'s output with a fixed random cotangent ``v``, and
compares every leaf's ``.grad`` with the central difference of ``sum(v * fn(...))``, where
``fn`` is evaluated on perturbed host copies of the inputs. A failure names the input, its
worst element and both values there.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tensorweaver as tw
from tensor_reference import dtype_name, host


def gradcheck(
    fn: Callable[..., Any],
    *inputs: Any,
    eps: float = 1e-6,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    seed: int = 0,
) -> None:
    """Autograd's gradients of ``fn`` (tensors in, one float64 tensor out) at ``inputs``
    (float64 host arrays) match finite differences."""
    arrays = [np.asarray(x, dtype=np.float64) for x in inputs]
    leaves = [tw.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    assert dtype_name(out.dtype) == "float64", f"fn gives {out.dtype}; gradcheck needs float64"
    cotangent = np.random.default_rng(seed).standard_normal(tuple(out.shape))
    out.backward(tw.tensor(cotangent))
    for i, leaf in enumerate(leaves):
        analytic = _grad_of(leaf, arrays[i].shape)
        numeric = _finite_differences(fn, arrays, i, cotangent, eps)
        _compare(i, analytic, numeric, atol, rtol)


def gradgradcheck(fn: Callable[..., Any], *inputs: Any, seed: int = 1, **tolerances: float) -> None:
    """Second derivatives of ``fn`` match finite differences of its first derivatives, which
    ``tw.autograd.grad(..., create_graph=True)`` builds as a differentiable graph."""

    def first_derivatives(*leaves: Any) -> Any:
        out = fn(*leaves)
        v = tw.tensor(np.random.default_rng(seed).standard_normal(tuple(out.shape)))
        grads = tw.autograd.grad([out], list(leaves), grad_outputs=[v], create_graph=True)
        return tw.cat([g.reshape(-1) for g in grads])

    gradcheck(first_derivatives, *inputs, **tolerances)


def _grad_of(leaf: Any, shape: tuple[int, ...]) -> np.ndarray:
    """The leaf's ``.grad`` on the host; None (the leaf was not used) counts as zeros."""
    grad = leaf.grad
    if grad is None:
        return np.zeros(shape)
    assert tuple(grad.shape) == shape, f".grad has shape {tuple(grad.shape)}, leaf {shape}"
    assert dtype_name(grad.dtype) == "float64", f".grad has dtype {grad.dtype}, leaf float64"
    assert grad.device == leaf.device, f".grad is on {grad.device}, leaf on {leaf.device}"
    return host(grad)


def _objective(fn: Callable[..., Any], arrays: list[np.ndarray], cotangent: np.ndarray) -> float:
    # Leaves require grad here too, so fn may itself differentiate (gradgradcheck).
    out = fn(*(tw.tensor(a, requires_grad=True) for a in arrays))
    return float(np.sum(cotangent * host(out)))


def _finite_differences(
    fn: Callable[..., Any],
    arrays: list[np.ndarray],
    i: int,
    cotangent: np.ndarray,
    eps: float,
) -> np.ndarray:
    shifted = list(arrays)
    shifted[i] = arrays[i].copy()
    grad = np.zeros_like(arrays[i])
    for index in np.ndindex(arrays[i].shape):
        value = arrays[i][index]
        shifted[i][index] = value + eps
        plus = _objective(fn, shifted, cotangent)
        shifted[i][index] = value - eps
        minus = _objective(fn, shifted, cotangent)
        shifted[i][index] = value
        grad[index] = (plus - minus) / (2 * eps)
    return grad


def _compare(i: int, analytic: np.ndarray, numeric: np.ndarray, atol: float, rtol: float) -> None:
    diff = np.abs(analytic - numeric)
    bad = ~(diff <= atol + rtol * np.abs(numeric))  # NaN counts as bad
    if not bad.any():
        return
    worst = np.unravel_index(
        np.argmax(np.where(bad, np.nan_to_num(diff, nan=np.inf), -1.0)), bad.shape
    )
    raise AssertionError(
        f"gradient of input {i} (shape {analytic.shape}) at {tuple(int(k) for k in worst)}: "
        f"autograd {float(analytic[worst])!r}, finite differences {float(numeric[worst])!r}; "
        f"{int(bad.sum())} of {bad.size} elements differ beyond atol={atol}, rtol={rtol}"
    )
