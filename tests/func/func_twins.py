"""Running one function-building recipe with tw and with torch, and comparing results.

A recipe ``build(m)`` takes the module (``tensorweaver`` or ``torch``) and returns what to
call; both run on the same float64 inputs. Results are compared as trees: same containers,
and per tensor the same shape, dtype, ``requires_grad`` and values (float64 tolerances).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

RTOL = 1e-9
ATOL = 1e-10


def arrays(*shapes: tuple, seed: int = 0) -> list[np.ndarray]:
    """Float64 arrays in [-1.5, 1.5) of the given shapes."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.5, 1.5, size=s) for s in shapes]


def tensors(m: Any, arrs: list[np.ndarray]) -> list[Any]:
    return [m.tensor(a, dtype=m.float64) for a in arrs]


def assert_tree_like(ours: Any, theirs: Any, path: str = "result") -> None:
    """``ours`` (tw) has the structure, shapes, dtypes, grad flags and values of ``theirs``."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tw.Tensor), f"{path}: {type(ours)} is not a Tensor"
        assert tuple(ours.shape) == tuple(theirs.shape), f"{path}: {ours.shape} != {theirs.shape}"
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], path
        assert ours.requires_grad == theirs.requires_grad, f"{path}: requires_grad"
        np.testing.assert_allclose(
            np.asarray(ours.detach()), theirs.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=path
        )
    elif isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs), f"{path}: {type(ours)} != {type(theirs)}"
        assert len(ours) == len(theirs), f"{path}: length {len(ours)} != {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_tree_like(a, b, f"{path}[{i}]")
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), f"{path}: keys"
        for k in theirs:
            assert_tree_like(ours[k], theirs[k], f"{path}[{k!r}]")
    else:
        assert ours == theirs, f"{path}: {ours!r} != {theirs!r}"


def like_torch(build: Callable[[Any], Callable], *arrs: np.ndarray) -> Any:
    """``build(m)(*inputs)`` with tw and with torch agree; returns tw's result."""
    ours = build(tw)(*tensors(tw, list(arrs)))
    theirs = build(torch)(*tensors(torch, list(arrs)))
    assert_tree_like(ours, theirs)
    return ours


def raises_like_torch(build: Callable[[Any], Callable], *arrs: np.ndarray) -> BaseException:
    """``build(m)(*inputs)`` raises in torch and the same class in tw; returns tw's error."""
    with pytest.raises(Exception) as theirs:
        build(torch)(*tensors(torch, list(arrs)))
    with pytest.raises(theirs.type) as ours:
        build(tw)(*tensors(tw, list(arrs)))
    return ours.value


def finite_gradient(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6):
    """Central differences of the scalar ``f`` at ``x``, one entry per element."""
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        out[i] = (f(hi) - f(lo)) / (2 * eps)
    return out
