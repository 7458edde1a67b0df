"""Run one expression on tw and on torch with identical float64 inputs and compare.

An expression is written once, as ``fn(F, *tensors)``, and called with
``tensorweaver.nn.functional`` and ``torch.nn.functional``: the two share their API. Outputs
must agree, then the gradients of every floating input after backpropagating the same
random cotangent. ``gradcheck`` compares tw's gradients with central differences instead.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tensorweaver as tw
import tensorweaver.nn.functional as twF
import torch
import torch.nn.functional as torchF
from torch_twins import host

RTOL = 1e-9
ATOL = 1e-11

Expr = Callable[..., Any]


def assert_close(actual: Any, expected: Any, rtol: float = RTOL, atol: float = ATOL) -> None:
    a, e = host(actual), host(expected)
    assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    assert a.dtype == e.dtype, f"dtype {a.dtype} != expected {e.dtype}"
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def _outputs(result: Any) -> tuple:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def check(
    fn: Expr,
    *arrays: np.ndarray,
    grad: tuple[int, ...] | None = None,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> tuple:
    """``fn`` on tw and torch agree in outputs and in the gradients of the inputs listed in
    ``grad`` (default: every floating one). Returns tw's outputs."""
    if grad is None:
        grad = tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")
    ours = [tw.tensor(a, requires_grad=i in grad) for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a, requires_grad=i in grad) for i, a in enumerate(arrays)]
    outs, expected = _outputs(fn(twF, *ours)), _outputs(fn(torchF, *theirs))
    assert len(outs) == len(expected)
    for a, e in zip(outs, expected):
        assert_close(a, e, rtol, atol)
    if not grad:
        return outs
    rng = np.random.default_rng(1)
    objective_ours, objective_theirs = 0, 0
    for a, e in zip(outs, expected):
        if e.requires_grad:
            cotangent = rng.standard_normal(tuple(e.shape))
            objective_ours = objective_ours + (a * tw.tensor(cotangent)).sum()
            objective_theirs = objective_theirs + (e * torch.tensor(cotangent)).sum()
    objective_theirs.backward()
    objective_ours.backward()
    for i in grad:
        if theirs[i].grad is None:  # unused input: no gradient, or zeros
            assert ours[i].grad is None or not host(ours[i].grad).any(), f"input {i} is unused"
        else:
            assert ours[i].grad is not None, f"input {i} got no gradient"
            assert_close(ours[i].grad, theirs[i].grad, rtol, atol)
    return outs


def check_same(
    first: Expr, second: Expr, *arrays: np.ndarray, rtol: float = RTOL, atol: float = ATOL
) -> None:
    """Two tw expressions of the same tensors agree in outputs and input gradients."""
    results = []
    for fn in (first, second):
        leaves = [tw.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        out = fn(*leaves)
        cotangent = np.random.default_rng(1).standard_normal(tuple(out.shape))
        (out * tw.tensor(cotangent)).sum().backward()
        results.append((out, [leaf.grad for leaf in leaves if leaf.requires_grad]))
    (out_a, grads_a), (out_b, grads_b) = results
    assert_close(out_a, out_b, rtol, atol)
    for a, b in zip(grads_a, grads_b):
        assert_close(a, b, rtol, atol)


def gradcheck(
    fn: Expr,
    *arrays: np.ndarray,
    eps: float = 1e-6,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    samples: int = 24,
) -> None:
    """tw's gradients of ``fn(F, *tensors)`` (one float64 output) at ``arrays`` match central
    differences, at up to ``samples`` random elements of each floating input."""
    leaves = [tw.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(twF, *leaves)
    rng = np.random.default_rng(2)
    cotangent = rng.standard_normal(tuple(out.shape))
    (out * tw.tensor(cotangent)).sum().backward()

    def objective(shifted: list[np.ndarray]) -> float:
        with tw.no_grad():
            return float(np.sum(cotangent * host(fn(twF, *(tw.tensor(a) for a in shifted)))))

    for i, a in enumerate(arrays):
        if a.dtype.kind != "f":
            continue
        analytic = host(leaves[i].grad)
        flat = rng.permutation(a.size)[:samples]
        for k in flat:
            index = np.unravel_index(k, a.shape)
            shifted = [b.copy() for b in arrays]
            shifted[i][index] += eps
            plus = objective(shifted)
            shifted[i][index] -= 2 * eps
            numeric = (plus - objective(shifted)) / (2 * eps)
            assert abs(analytic[index] - numeric) <= atol + rtol * abs(numeric), (
                f"gradient of input {i} at {tuple(int(j) for j in index)}: autograd "
                f"{analytic[index]!r}, finite differences {numeric!r}"
            )


def randn(*shape: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    """Seeded standard normal float64 samples (an array even for shape ())."""
    return np.asarray(np.random.default_rng(seed).standard_normal(shape) * scale)
