"""References for the complex-number tests: PyTorch's results on the same values, NumPy
complex128, and gradients by finite differences in the real and imaginary parts.

A test writes a call once as ``fn(m, *tensors)`` and runs it with ``m = tensorweaver`` and
``m = torch``; host arrays among the arguments become tensors of their own NumPy dtype.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import RTOL, dtype_name, host

#: Relative tolerances, also ``rtol * max|expected|`` absolute (as the Tensor tests'):
#: complex results as their parts' real dtype.
TOLERANCE = {**RTOL, "complex64": 4e-6, "complex128": 1e-11, "float64": 1e-11}


def cplx(shape: tuple[int, ...], seed: int = 0, low: float = 0.3, high: float = 1.5) -> np.ndarray:
    """Complex128 host samples whose real and imaginary parts have magnitude in [low, high)
    and random signs: away from the axes, where angle, sgn and sqrt have their cuts and kinks."""
    rng = np.random.default_rng(seed)

    def part() -> np.ndarray:
        magnitude = rng.uniform(low, high, shape)
        return np.where(rng.uniform(size=shape) < 0.5, -magnitude, magnitude)

    return np.asarray(part() + 1j * part())


def close(actual: Any, expected: Any, dtype: str, what: str) -> None:
    """Host values agree within ``TOLERANCE[dtype]`` (exactly for integers and bools)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if dtype not in TOLERANCE:
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    finite = expected[np.isfinite(expected)]
    # The larger part, not |z|: the modulus of huge finite parts overflows to inf.
    finite = np.maximum(np.abs(finite.real), np.abs(finite.imag))
    atol = TOLERANCE[dtype] * (float(finite.max()) if finite.size else 0.0)
    np.testing.assert_allclose(actual, expected, rtol=TOLERANCE[dtype], atol=atol, err_msg=what)


def same(ours: Any, theirs: Any, path: str = "result") -> None:
    """A TensorWeaver result equals PyTorch's: tensors (dtype, shape, values), tuples,
    lists and Python scalars (a complex one must be a Python complex)."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tw.Tensor), f"{path}: {type(ours).__name__}, expected a tensor"
        name, expected = dtype_name(ours.dtype), dtype_name(theirs.dtype)
        assert name == expected, f"{path}: dtype {name}, PyTorch gives {expected}"
        assert tuple(ours.shape) == tuple(theirs.shape), f"{path}: shape {tuple(ours.shape)}"
        close(host(ours), theirs.detach().resolve_conj().numpy(), name, path)
    elif isinstance(theirs, (tuple, list)):
        assert isinstance(ours, type(theirs)), f"{path}: {type(ours)}, PyTorch gives {type(theirs)}"
        assert len(ours) == len(theirs), f"{path}: length {len(ours)}, PyTorch gives {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            same(a, b, f"{path}[{i}]")
    elif theirs is None:
        assert ours is None, f"{path}: {ours!r}, PyTorch gives None"
    else:
        assert type(ours) is type(theirs), f"{path}: {ours!r}, PyTorch gives {theirs!r}"
        assert ours == pytest.approx(theirs, rel=1e-6), f"{path}: {ours} != {theirs}"


def tensors(m: Any, args: tuple, requires_grad: bool = False) -> list:
    """Host arrays in ``args`` as tensors of module ``m`` (their NumPy dtype), the rest as is."""
    return [
        m.tensor(a, requires_grad=requires_grad) if isinstance(a, np.ndarray) else a for a in args
    ]


def like_torch(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(m, *args)`` agrees on tensorweaver and torch; returns ours."""
    ours = fn(tw, *tensors(tw, args))
    same(ours, fn(torch, *tensors(torch, args)))
    return ours


def real_loss(m: Any, out: Any, seed: int = 7) -> Any:
    """A real scalar of ``out`` that weighs every real and imaginary part differently, so a
    gradient that drops or swaps a part is caught."""
    rng = np.random.default_rng(seed)
    shape = tuple(out.shape)
    wr = m.tensor(rng.standard_normal(shape))
    if not out.dtype.is_complex:
        return (out * wr).sum()
    wi = m.tensor(rng.standard_normal(shape))
    return (m.real(out) * wr + m.imag(out) * wi).sum()


def grads_like_torch(fn: Callable[..., Any], *arrays: np.ndarray) -> list:
    """The gradients of ``real_loss(fn(m, *leaves))`` with respect to its leaves (the host
    arrays, complex128 or float64) agree on tensorweaver and torch; returns ours."""
    found = []
    for m in (tw, torch):
        leaves = tensors(m, arrays, requires_grad=True)
        real_loss(m, fn(m, *leaves)).backward()
        found.append([leaf.grad for leaf in leaves])
    same(found[0], found[1], "grads")
    return found[0]


def finite_differences(
    fn: Callable[..., Any], arrays: list[np.ndarray], i: int, eps: float = 1e-6
) -> np.ndarray:
    """d real_loss / dx + i d real_loss / dy for input ``i`` (x, y its real and imaginary
    parts; only dx for a real input), by central differences on tensorweaver."""

    def loss(shifted: list[np.ndarray]) -> float:
        return float(real_loss(tw, fn(tw, *(tw.tensor(a) for a in shifted))).item())

    base = arrays[i]
    steps = (eps, 1j * eps) if np.iscomplexobj(base) else (eps,)
    grad = np.zeros_like(base)
    for index in np.ndindex(base.shape):
        for step in steps:
            shifted = list(arrays)
            for sign in (1, -1):
                moved = base.copy()
                moved[index] += sign * step
                shifted[i] = moved
                grad[index] += sign * loss(shifted) / (2 * eps) * (step / eps)
    return grad


def gradcheck(fn: Callable[..., Any], *arrays: np.ndarray, tol: float = 1e-6) -> None:
    """Autograd's gradients of ``real_loss(fn(tw, *leaves))`` equal finite differences in the
    real and imaginary parts of every leaf, and have the leaves' dtypes."""
    arrays = [np.asarray(a) for a in arrays]
    leaves = tensors(tw, tuple(arrays), requires_grad=True)
    real_loss(tw, fn(tw, *leaves)).backward()
    for i, leaf in enumerate(leaves):
        assert leaf.grad is not None, f"input {i} got no gradient"
        assert leaf.grad.dtype is leaf.dtype, f"input {i}: .grad is {leaf.grad.dtype}"
        expected = finite_differences(fn, arrays, i)
        np.testing.assert_allclose(
            host(leaf.grad), expected, rtol=tol, atol=tol, err_msg=f"gradient of input {i}"
        )
