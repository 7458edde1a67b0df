"""Determinants: ``det``, ``slogdet`` and ``logdet``."""

from __future__ import annotations

import math

from tensorweaver.contract import dtypes
from tensorweaver.linalg import primitives as p
from tensorweaver.linalg._shared import eye_like, mH, mT, result
from tensorweaver.linalg.errors import check_square
from tensorweaver.linalg.fused import REAL, fused_or_reference
from tensorweaver.ops import complex as cx
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops.linalg import matmul
from tensorweaver.tensor import Tensor

Slogdet = result("linalg_slogdet", "sign", "logabsdet")
#: ``torch.slogdet``'s (and ``Tensor.slogdet``'s) result type, named apart from linalg's
OldSlogdet = result("slogdet", "sign", "logabsdet")


def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix (its gradient is finite at singular ones)."""
    check_square("linalg.det", A, complex_ok=True)
    return fused_or_reference(
        "det", "LinalgDetBackward0", _det, (A,), (), (None,), rule=_det_from_output
    )[0]


def _det(A: Tensor) -> tuple[Tensor]:
    return (p.det(A),)


def _det_from_output(inputs: tuple, outputs: tuple, grads: tuple) -> tuple:
    """det's gradient under ``create_graph`` where the backend computed it: the formula on
    the call's own output and A as it is now, as PyTorch's reads its saved result and A."""
    return (det_gradient(inputs[0], outputs[0], grads[0]),)


def det_gradient(a: Tensor, d: Tensor, g: Tensor) -> Tensor:
    """PyTorch's create_graph gradient of A from that of ``d`` = det(A): g conj(d) A^{-H};
    matrices with |det| < 100 eps get the cofactor matrix from the SVD instead, the
    others' inverse staying clear of them."""
    scale = mv.unsqueeze(mv.unsqueeze(ew.mul(g, cx.conj_physical(d)), -1), -1)
    eye = mv.expand(eye_like(a, a.shape[-1]), a.shape)
    if a.dtype.is_complex:  # the cofactors by the SVD below are written for real matrices
        return ew.mul(scale, p.solve_ex(mH(a), eye)[0])
    near = _near_singular(d, a)
    inverse_t = p.solve_ex(mT(ew.where(near, eye, a)), eye)[0]
    return ew.where(near, _det_singular(a, g), ew.mul(scale, inverse_t))


def _near_singular(d: Tensor, a: Tensor) -> Tensor:
    eps = 2.220446049250313e-16 if a.dtype.itemsize == 8 else 1.1920928955078125e-07
    return mv.unsqueeze(mv.unsqueeze(ew.lt(ew.abs(d), 100 * eps), -1), -1)


def _det_singular(a: Tensor, g: Tensor) -> Tensor:
    """U diag(g det(U) det(Vh) prod_{j != i} S_j) Vh: the cofactors by the SVD."""
    u, s, vh = p.svd(a, False)
    alpha = ew.mul(g, ew.mul(p.det(u), p.det(vh)))
    k = s.shape[-1]
    others = mv.expand(mv.unsqueeze(s, -2), (*s.shape, k))
    others = ew.where(eye_like(a, k).to(dtypes.bool_), 1.0, others)
    cofactor = ew.mul(rd.prod(others, -1), mv.unsqueeze(alpha, -1))
    return matmul(ew.mul(u, mv.unsqueeze(cofactor, -2)), vh)


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
