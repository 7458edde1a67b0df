"""The fft tests' reference: one call run as ``torch.fft`` and ``tw.fft`` on the same host
values, results (dtype, shape, values) and gradients of a real loss compared."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorweaver as tw
import torch

#: Tolerance relative to the largest magnitude of the expected array, per precision.
TOLERANCE = {"float32": 2e-5, "complex64": 2e-5, "float64": 1e-12, "complex128": 1e-12}


def values(shape: tuple, dtype: str, seed: int = 0) -> np.ndarray:
    """Random host values of ``shape`` in ``dtype`` (complex: both parts random)."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        v = v + 1j * rng.standard_normal(shape)
    return v.astype(dtype)


def host(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().numpy()
    return np.asarray(t.detach().resolve_conj().resolve_neg())


def loss(m: Any, y: Any) -> Any:
    """A real loss that weighs real and imaginary parts differently: (y.real**2 + y.imag)."""
    if y.dtype.is_complex:
        return (m.real(y) ** 2 + m.imag(y)).sum()
    return (y**2).sum()


def assert_close(ours: np.ndarray, theirs: np.ndarray, dtype: str, what: str) -> None:
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, torch {theirs.shape}"
    assert ours.dtype == theirs.dtype, f"{what}: dtype {ours.dtype}, torch {theirs.dtype}"
    nan = np.isnan(theirs)
    assert (np.isnan(ours) == nan).all(), f"{what}: NaN at other places than torch's"
    ours, theirs = ours[~nan], theirs[~nan]
    scale = max(1.0, float(np.abs(theirs).max(initial=0.0)))
    err = float(np.abs(ours - theirs).max(initial=0.0))
    assert err <= TOLERANCE[dtype] * scale, f"{what}: off by {err:.3g} (scale {scale:.3g})"


def compare(name: str, x: np.ndarray, grad: bool = True, **kwargs: Any) -> None:
    """``torch.fft.<name>(x, **kwargs)`` and ``tw.fft.<name>``: values, then the gradients of
    :func:`loss` (for float and complex inputs)."""
    dtype = x.dtype.name
    differentiable = grad and x.dtype.kind in "fc"
    xt = torch.tensor(x, requires_grad=differentiable)
    xw = tw.tensor(x, requires_grad=differentiable)
    yt = getattr(torch.fft, name)(xt, **kwargs)
    yw = getattr(tw.fft, name)(xw, **kwargs)
    what = f"{name}({dtype}{list(x.shape)}, {kwargs})"
    out_dtype = yt.dtype.__repr__().removeprefix("torch.")
    assert_close(host(yw), host(yt), out_dtype, what)
    if differentiable:
        loss(torch, yt).backward()
        loss(tw, yw).backward()
        assert_close(host(xw.grad), host(xt.grad), dtype, f"gradient of {what}")
