"""The standard's ``linalg`` extension over ``tw.linalg``.

Each function is present only where ``tw.linalg`` has the function it calls
(:mod:`.provided`); ``matmul``, ``matrix_transpose``, ``tensordot`` and ``vecdot`` are the
main namespace's; ``diagonal``, ``outer`` and ``trace`` use the main ``tw`` functions.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Union

import tensorweaver as tw
from tensorweaver.array_api.elementwise import promoted
from tensorweaver.array_api.linear_algebra import matmul, matrix_transpose, tensordot, vecdot
from tensorweaver.array_api.provided import Provided
from tensorweaver.contract.dtypes import DType
from tensorweaver.tensor import Tensor

__all__ = [
    "diagonal",
    "matmul",
    "matrix_transpose",
    "outer",
    "tensordot",
    "trace",
    "vecdot",
]

CORE = Provided("tensorweaver.linalg")
CORE.rename(
    det="det", eigvalsh="eigvalsh", inv="inv", matrix_power="matrix_power", svdvals="svdvals"
)


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


@CORE.needs("cholesky")
def _cholesky(x: Tensor, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of symmetric positive-definite matrices (lower unless ``upper``)."""
    return CORE.core("cholesky")(x, upper=upper)


@CORE.needs("cross")
def _cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``axis``."""
    a, b = tw.broadcast_tensors(*promoted(x1, x2))  # torch.linalg.cross broadcasts too
    return CORE.core("cross")(a, b, dim=axis)


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """The ``offset``-th diagonal of each matrix."""
    return tw.diagonal(x, offset, -2, -1)


@CORE.needs("eigh")
def _eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices."""
    return EighResult(*CORE.core("eigh")(x))


@CORE.needs("matrix_norm")
def _matrix_norm(
    x: Tensor, /, *, keepdims: bool = False, ord: Union[int, float, str, None] = "fro"
) -> Tensor:  # noqa: A002
    """The ``ord`` norm of each matrix."""
    return CORE.core("matrix_norm")(x, ord=ord, keepdim=keepdims)


@CORE.needs("matrix_rank")
def _matrix_rank(x: Tensor, /, *, rtol: Union[float, Tensor, None] = None) -> Tensor:
    """The number of singular values above ``rtol`` times the largest."""
    return CORE.core("matrix_rank")(x, rtol=rtol)


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The outer product of two vectors."""
    a, b = promoted(x1, x2)
    return tw.outer(a, b)


@CORE.needs("pinv")
def _pinv(x: Tensor, /, *, rtol: Union[float, Tensor, None] = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse (singular values under ``rtol`` times the largest
    count as zero)."""
    return CORE.core("pinv")(x, rtol=rtol)


@CORE.needs("qr")
def _qr(x: Tensor, /, *, mode: str = "reduced") -> QRResult:
    """The QR decomposition (``mode`` ``"reduced"`` or ``"complete"``)."""
    return QRResult(*CORE.core("qr")(x, mode=mode))


@CORE.needs("slogdet")
def _slogdet(x: Tensor, /) -> SlogdetResult:
    """The sign and the log of the absolute value of each determinant."""
    return SlogdetResult(*CORE.core("slogdet")(x))


@CORE.needs("solve")
def _solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The solution of ``x1 @ x = x2`` (``x2`` 1-d: a vector)."""
    return CORE.core("solve")(*promoted(x1, x2))


@CORE.needs("svd")
def _svd(x: Tensor, /, *, full_matrices: bool = True) -> SVDResult:
    """The singular value decomposition ``U @ diag(S) @ Vh``."""
    return SVDResult(*CORE.core("svd")(x, full_matrices=full_matrices))


def trace(x: Tensor, /, *, offset: int = 0, dtype: Optional[DType] = None) -> Tensor:
    """The sum of the ``offset``-th diagonal of each matrix (integers in int64 unless
    ``dtype``)."""
    if dtype is None and x.dtype.kind != "f":
        dtype = tw.int64
    return diagonal(x, offset=offset).sum(-1, dtype=dtype)


@CORE.needs("vector_norm")
def _vector_norm(
    x: Tensor,
    /,
    *,
    axis: Union[int, tuple, None] = None,
    keepdims: bool = False,
    ord: Union[int, float] = 2,  # noqa: A002
) -> Tensor:
    """The ``ord`` norm of the vectors along ``axis`` (None: all of ``x`` as one vector)."""
    return CORE.core("vector_norm")(x, ord=ord, dim=axis, keepdim=keepdims)


def __getattr__(name: str) -> Any:
    return CORE.get(name)


def __dir__() -> list[str]:
    return sorted([*__all__, *CORE.names()])
