"""The three fft primitives as tensor ops: the backend's kernel or the host's (through
:func:`~tensorweaver.ops.host_fallback.run_optional`), one graph node per call, named as
PyTorch names them (``FftC2CBackward0``, ...). ``norm`` is the IR's absolute scale
("none", "by_root_n", "by_n"); gradient rules: ``tensorweaver.autograd.fft_rules``.
"""

from __future__ import annotations

from tensorweaver.contract.dtypes import DType
from tensorweaver.fft import host
from tensorweaver.ops.apply import apply, labelled
from tensorweaver.ops.host_fallback import run_optional
from tensorweaver.tensor import Tensor


def _node(op: str, grad_fn: str, x: Tensor, native: object, dtype: DType, saved: tuple) -> Tensor:
    return labelled(apply(op, native, dtype, (x,), saved), grad_fn, x)


def c2c(x: Tensor, dims: tuple, norm: str, forward: bool) -> Tensor:
    """The complex DFT of complex ``x`` over ``dims`` (inverse unless ``forward``)."""
    native = run_optional(x.backend, "fft_c2c", host.c2c, x.dtype, x.native, dims, norm, forward)
    return _node("fft_c2c", "FftC2CBackward0", x, native, x.dtype, (dims, norm, forward))


def r2c(x: Tensor, dims: tuple, norm: str, onesided: bool) -> Tensor:
    """The forward DFT of real ``x`` over ``dims``; half the last one's bins if ``onesided``."""
    dtype = x.dtype.to_complex()
    native = run_optional(x.backend, "fft_r2c", host.r2c, dtype, x.native, dims, norm, onesided)
    return _node("fft_r2c", "FftR2CBackward0", x, native, dtype, (dims, norm, onesided))


def c2r(x: Tensor, dims: tuple, norm: str, last_dim_size: int) -> Tensor:
    """The real inverse DFT of the one-sided spectrum ``x`` over ``dims``, ``last_dim_size``
    points along the last of them."""
    dtype = x.dtype.to_real()
    args = (x.native, dims, norm, last_dim_size)
    native = run_optional(x.backend, "fft_c2r", host.c2r, dtype, *args)
    return _node("fft_c2r", "FftC2RBackward0", x, native, dtype, (dims, norm, last_dim_size))
