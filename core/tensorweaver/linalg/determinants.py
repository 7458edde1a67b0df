"""Determinants: ``det``, ``slogdet`` and ``logdet``."""

from __future__ import annotations

import math

from tensorweaver.linalg import primitives as p
from tensorweaver.linalg._shared import result
from tensorweaver.linalg.errors import check_square
from tensorweaver.linalg.fused import REAL, fused_or_reference
from tensorweaver.ops import complex as cx
from tensorweaver.ops import elementwise as ew
from tensorweaver.tensor import Tensor

Slogdet = result("linalg_slogdet", "sign", "logabsdet")
#: ``torch.slogdet``'s (and ``Tensor.slogdet``'s) result type, named apart from linalg's
OldSlogdet = result("slogdet", "sign", "logabsdet")


def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix (its gradient is finite at singular ones)."""
    check_square("linalg.det", A, complex_ok=True)
    return fused_or_reference("det", "LinalgDetBackward0", _det, (A,), (), (None,))[0]


def _det(A: Tensor) -> tuple[Tensor]:
    return (p.det(A),)


def linalg_slogdet(A: Tensor) -> tuple:
    """``tw.linalg.slogdet``: (sign, log|det|) of each square matrix; a singular one gives
    (0, -inf)."""
    check_square("linalg.slogdet", A, complex_ok=True)
    return Slogdet(*_slogdet(A))


def slogdet(input: Tensor) -> tuple:  # noqa: A002  (PyTorch's name)
    """``torch.slogdet``: ``tw.linalg.slogdet`` as a ``torch.return_types.slogdet``."""
    check_square("linalg.slogdet", input, complex_ok=True)
    return OldSlogdet(*_slogdet(input))


def _slogdet(A: Tensor) -> tuple[Tensor, Tensor]:
    return fused_or_reference(
        "slogdet", "LinalgSlogdetBackward0", p.slogdet, (A,), (), (None, REAL)
    )


def logdet(input: Tensor) -> Tensor:  # noqa: A002  (PyTorch's name)
    """log(det): NaN where the determinant is negative, -inf where it is 0; for complex
    matrices log|det| + i arg(det)."""
    check_square("logdet", input, complex_ok=True)
    sign, logabs = _slogdet(input)
    if input.dtype.is_complex:
        return cx.complex(logabs, cx.angle(sign))
    return ew.where(ew.lt(sign, 0), math.nan, logabs)
