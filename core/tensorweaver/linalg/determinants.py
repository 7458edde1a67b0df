"""Determinants: ``det``, ``slogdet`` and ``logdet``."""

from __future__ import annotations

import math

from tensorweaver.linalg import primitives as p
from tensorweaver.linalg._shared import result
from tensorweaver.linalg.errors import check_square
from tensorweaver.linalg.fused import fused_or_reference
from tensorweaver.ops import elementwise as ew
from tensorweaver.tensor import Tensor

Slogdet = result("linalg_slogdet", "sign", "logabsdet")


def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix (its gradient is finite at singular ones)."""
    check_square("linalg.det", A)
    return fused_or_reference("det", "LinalgDetBackward0", _det, (A,), (), (None,))[0]


def _det(A: Tensor) -> tuple[Tensor]:
    return (p.det(A),)


def slogdet(A: Tensor) -> tuple:
    """(sign, log|det|) of each square matrix; a singular one gives (0, -inf)."""
    check_square("linalg.slogdet", A)
    return Slogdet(*_slogdet(A))


def _slogdet(A: Tensor) -> tuple[Tensor, Tensor]:
    return fused_or_reference(
        "slogdet", "LinalgSlogdetBackward0", p.slogdet, (A,), (), (A.dtype, None)
    )


def logdet(input: Tensor) -> Tensor:  # noqa: A002  (PyTorch's name)
    """log(det): NaN where the determinant is negative, -inf where it is 0."""
    check_square("logdet", input)
    sign, logabs = _slogdet(input)
    return ew.where(ew.lt(sign, 0), math.nan, logabs)
