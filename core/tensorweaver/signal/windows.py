"""``tw.signal.windows``: PyTorch's ``torch.signal.windows`` window functions, by the same
names and keywords: ``M`` points, symmetric (``sym=True``, for filter design) or periodic
(the symmetric window of ``M + 1`` points without its last, for spectral analysis).
Computed in float64 and rounded once to ``dtype`` (float32 or float64)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Callable

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops.signal_windows import bessel_shape, cosine_sum, triangle
from tensorweaver.tensor import Tensor

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]


def _window(
    fn: str,
    M: int,
    sym: bool,
    shape: Callable[[Tensor, int], Tensor],
    dtype: DType | None,
    device: Any,
    requires_grad: bool,
) -> Tensor:
    """``shape(n, last)`` over the ``n`` = 0 .. L-1 of the symmetric window of L points
    (``last`` = L - 1), its first ``M`` points, as a tensor of ``dtype``."""
    if M < 0:
        raise ValueError(f"{fn} requires non-negative window length, got M={M}")
    dtype = cr.get_default_dtype() if dtype is None else dtype
    if dtype not in (dtypes.float32, dtypes.float64):
        raise ValueError(f"{fn} expects float32 or float64 dtypes, got: {dtype.name}")
    if M <= 1:
        out = cr.ones(M, dtype=dtype, device=device)
    else:
        points = M if sym else M + 1
        n = cr.arange(M, dtype=dtypes.float64, device=device)
        out = shape(n, points - 1).to(dtype)
    return out.requires_grad_(requires_grad)


def general_cosine(
    M: int,
    *,
    a: Iterable[float],
    sym: bool = True,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """sum over k of (-1)**k a[k] cos(2 pi k n / (L - 1))."""
    weights = [float(w) for w in a]
    if not weights:
        raise ValueError("Coefficients cannot be empty")
    shape = cosine_sum(*weights)
    return _window("general_cosine", M, sym, shape, dtype, device, requires_grad)


def general_hamming(
    M: int,
    *,
    alpha: float = 0.54,
    sym: bool = True,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """alpha - (1 - alpha) cos(2 pi n / (L - 1))."""
    return general_cosine(
        M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, device=device, requires_grad=requires_grad
    )


def hann(
    M: int,
    *,
    sym: bool = True,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    return general_hamming(
        M, alpha=0.5, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad
    )


def hamming(
    M: int,
    *,
    sym: bool = True,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    return general_hamming(M, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad)


def blackman(
    M: int,
    *,
    sym: bool = True,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    return general_cosine(
        M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, device=device, requires_grad=requires_grad
    )


def nuttall(
    M: int,
    *,
    sym: bool = True,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    return general_cosine(
        M,
        a=[0.3635819, 0.4891775, 0.1365995, 0.0106411],
        sym=sym,
        dtype=dtype,
        device=device,
        requires_grad=requires_grad,
    )


def bartlett(
    M: int,
    *,
    sym: bool = True,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """1 - |2 n / (L - 1) - 1|."""
    return _window("bartlett", M, sym, triangle, dtype, device, requires_grad)


def cosine(
    M: int,
    *,
    sym: bool = True,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """sin(pi (n + 1/2) / L)."""

    def shape(n: Tensor, last: int) -> Tensor:
        return ew.sin(ew.mul(n + 0.5, math.pi / (last + 1)))

    return _window("cosine", M, sym, shape, dtype, device, requires_grad)


def exponential(
    M: int,
    *,
    center: float | None = None,
    tau: float = 1.0,
    sym: bool = True,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """exp(-|n - center| / tau), centred on the middle of the window by default."""
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")

    def shape(n: Tensor, last: int) -> Tensor:
        middle = last / 2 if center is None else center
        return ew.exp(ew.mul(ew.abs(n - middle), -1.0 / tau))

    out = _window("exponential", M, sym, shape, dtype, device, requires_grad)
    if M == 1 and center is not None:  # PyTorch's one point is exp(-|center| / tau) here
        out = shape(cr.zeros(1, dtype=dtypes.float64, device=device), 0).to(out.dtype)
        out.requires_grad_(requires_grad)
    return out


def gaussian(
    M: int,
    *,
    std: float = 1.0,
    sym: bool = True,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """exp(-((n - (L - 1) / 2) / std)**2 / 2)."""
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")

    def shape(n: Tensor, last: int) -> Tensor:
        z = ew.mul(n - last / 2, 1.0 / std)
        return ew.exp(ew.mul(z * z, -0.5))

    return _window("gaussian", M, sym, shape, dtype, device, requires_grad)


def kaiser(
    M: int,
    *,
    beta: float = 12.0,
    sym: bool = True,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """I0(beta sqrt(1 - (2 n / (L - 1) - 1)**2)) / I0(beta)."""
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    shape = bessel_shape(beta, device)
    return _window("kaiser", M, sym, shape, dtype, device, requires_grad)
