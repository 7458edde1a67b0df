"""PyTorch's window functions for spectral analysis: ``tw.hann_window``,
``hamming_window``, ``blackman_window``, ``bartlett_window`` and ``kaiser_window``.

A ``periodic`` window of length N is the symmetric one of length N + 1 without its last
point (for ``stft``); a window of length 1 is ``[1.]``. The values are computed in float64
and rounded once to ``dtype`` (PyTorch computes in ``dtype``, so a float16 window may differ
from it in the last place).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops.special import i0
from tensorweaver.tensor import Tensor


def _window(
    fn: str,
    window_length: int,
    periodic: bool,
    shape: Callable[[Tensor, int], Tensor],
    dtype: DType | None,
    device: Any,
    requires_grad: bool,
) -> Tensor:
    """``shape(n, m)`` over the points ``n`` = 0 .. N-1 with ``m`` the symmetric window's
    last point, as a tensor of ``dtype``."""
    if isinstance(window_length, bool) or not isinstance(window_length, int):
        raise TypeError(
            f"{fn}(): argument 'window_length' (position 1) must be int, not "
            f"{type(window_length).__name__}"
        )
    dtype = cr.get_default_dtype() if dtype is None else dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"{fn} expects floating point dtypes, got: {dtype.name}")
    if window_length < 0:
        raise RuntimeError(
            f"{fn} requires non-negative window_length, got window_length={window_length}"
        )
    if window_length <= 1:
        out = cr.ones(window_length, dtype=dtype, device=device)
    else:
        m = window_length if periodic else window_length - 1
        n = cr.arange(window_length, dtype=dtypes.float64, device=device)
        out = shape(n, m).to(dtype)
    return out.requires_grad_(requires_grad)


def cosine_sum(*weights: float) -> Callable[[Tensor, int], Tensor]:
    """The sum of ``weights[k] * cos(2 pi k n / m)`` with alternating signs."""

    def shape(n: Tensor, m: int) -> Tensor:
        out = cr.full_like(n, weights[0])
        for k, w in enumerate(weights[1:], start=1):
            term = ew.mul(ew.cos(ew.mul(n, 2 * math.pi * k / m)), w)
            out = ew.sub(out, term) if k % 2 else ew.add(out, term)
        return out

    return shape


def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """0.5 - 0.5 cos(2 pi n / m)."""
    shape = cosine_sum(0.5, 0.5)
    return _window("hann_window", window_length, periodic, shape, dtype, device, requires_grad)


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """alpha - beta cos(2 pi n / m)."""
    shape = cosine_sum(alpha, beta)
    return _window("hamming_window", window_length, periodic, shape, dtype, device, requires_grad)


def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """0.42 - 0.5 cos(2 pi n / m) + 0.08 cos(4 pi n / m)."""
    shape = cosine_sum(0.42, 0.5, 0.08)
    return _window("blackman_window", window_length, periodic, shape, dtype, device, requires_grad)


def bessel_shape(beta: float, device: Any) -> Callable[[Tensor, int], Tensor]:
    """Kaiser's I0(beta sqrt(1 - (2 n / m - 1)**2)) / I0(beta)."""
    peak = i0(cr.tensor(float(beta), dtype=dtypes.float64, device=device))

    def shape(n: Tensor, m: int) -> Tensor:
        ratio = ew.sub(ew.mul(n, 2.0 / m), 1.0)
        inside = ew.clamp(ew.sub(1.0, ew.mul(ratio, ratio)), min=0.0)
        return ew.div(i0(ew.mul(ew.sqrt(inside), beta)), peak)

    return shape


def triangle(n: Tensor, m: int) -> Tensor:
    return ew.sub(1.0, ew.abs(ew.sub(ew.mul(n, 2.0 / m), 1.0)))


def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """1 - |2 n / m - 1|."""
    return _window(
        "bartlett_window", window_length, periodic, triangle, dtype, device, requires_grad
    )


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """I0(beta sqrt(1 - (2 n / m - 1)^2)) / I0(beta)."""
    shape = bessel_shape(beta, device)
    return _window("kaiser_window", window_length, periodic, shape, dtype, device, requires_grad)
