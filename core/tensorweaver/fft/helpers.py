"""PyTorch's helpers of ``torch.fft``: sample frequencies (``fftfreq``, ``rfftfreq``) and
the shifts that move the zero frequency to the centre and back (``fftshift``,
``ifftshift``), composed of ``arange``, ``cat`` and ``roll``.
"""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.contract.dtypes import DType
from tensorweaver.fft.arguments import wrap_dim
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops.creation import arange, with_out
from tensorweaver.promotion import get_default_dtype
from tensorweaver.tensor import Tensor


def _frequencies(
    op: str, n: Any, d: float, dtype: DType | None, device: Any, requires_grad: bool, half: bool
) -> Tensor:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{op}(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(
            f"Trying to create tensor with negative dimension {n}: [{n}] ({op} needs n >= 0)"
        )
    dtype = dtype or get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{op} requires a floating point or complex dtype, got {dtype.name}")
    real = dtype.to_real() if dtype.is_complex else dtype
    if half:
        k = arange(n // 2 + 1, dtype=real, device=device)
    else:  # 0, 1, ..., then the negative frequencies -(n // 2), ..., -1
        k = mv.cat(
            [
                arange((n + 1) // 2, dtype=real, device=device),
                arange(-(n // 2), 0, dtype=real, device=device),
            ]
        )
    # 1 / 0 is inf as in C++, so rfftfreq(0) is [nan] as PyTorch gives it
    k = ew.mul(k, 1.0 / (n * d) if n * d else math.copysign(math.inf, d))
    if dtype.is_complex:
        k = ew.cast(k, dtype)
    return k.requires_grad_(requires_grad)


@with_out("fftfreq", warns=True)
def fftfreq(
    n: int,
    d: float = 1.0,
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``: ``[0,
    1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)`` (``torch.fft.fftfreq``).
    ``layout`` is taken for PyTorch's signature: every tensor is strided; ``out=`` as
    arange takes it (computed in ``out``'s dtype; resizing a non-empty one warns)."""
    return _frequencies("fftfreq", n, d, dtype, device, requires_grad, half=False)


@with_out("rfftfreq", warns=True)
def rfftfreq(
    n: int,
    d: float = 1.0,
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The sample frequencies of ``rfft``'s bins: ``[0, 1, ..., n // 2] / (d * n)``
    (``torch.fft.rfftfreq``)."""
    return _frequencies("rfftfreq", n, d, dtype, device, requires_grad, half=True)


def _shift(op: str, input: Tensor, dim: Any, inverse: bool) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(
            f"fft_{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    dims = list(range(input.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        raise RuntimeError(
            f"{op}: `shifts` required: a 0-d tensor has no dimension to shift (as PyTorch)"
        )
    sizes = [input.shape[wrap_dim(d, input.ndim)] for d in dims]
    shifts = [(n + 1) // 2 if inverse else n // 2 for n in sizes]
    return mv.roll(input, shifts, dims)


def fftshift(input: Tensor, dim: Any = None) -> Tensor:
    """``input`` rolled so the zero frequency is at the centre of each of ``dim`` (default:
    every dimension) (``torch.fft.fftshift``)."""
    return _shift("fftshift", input, dim, inverse=False)


def ifftshift(input: Tensor, dim: Any = None) -> Tensor:
    """The inverse of ``fftshift`` (``torch.fft.ifftshift``)."""
    return _shift("ifftshift", input, dim, inverse=True)
