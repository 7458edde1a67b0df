"""PyTorch's older spellings outside ``torch.linalg`` (``torch.svd``, ``torch.qr``,
``torch.lu``, ``torch.triangular_solve``, ...), each in terms of its ``tw.linalg``
replacement, with the old arguments and results."""

from __future__ import annotations

import functools

from tensorweaver.amp import autocast_dtype, float32_operands, outside_autocast
from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.linalg._shared import mH_view, mT, result
from tensorweaver.linalg.determinants import det as _det
from tensorweaver.linalg.eigen import svd as _svd
from tensorweaver.linalg.eigen import svdvals
from tensorweaver.linalg.errors import check_matrix
from tensorweaver.linalg.factorizations import (
    cholesky_recorded_as,
    householder_product,
    lu_factor_ex,
    lu_solve,
    unpack,
)
from tensorweaver.linalg.factorizations import qr as _qr
from tensorweaver.linalg.one_node import formula_call
from tensorweaver.linalg.products import matrix_exp as _matrix_exp
from tensorweaver.linalg.solvers import inv, pinv, solve_triangular
from tensorweaver.ops import creation as cr
from tensorweaver.ops import movement as mv
from tensorweaver.ops.apply import labelled
from tensorweaver.tensor import Tensor

SVD = result("svd", "U", "S", "V")
QR = result("qr", "Q", "R")
LUUnpack = result("lu_unpack", "P", "L", "U")
TriangularSolve = result("triangular_solve", "solution", "cloned_coefficient")


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> tuple:  # noqa: A002
    """``torch.svd``: (U, S, V) with A = U diag(S) V^T (V, not Vh); ``some`` keeps the
    reduced factors; without ``compute_uv``, U and V are zeros of the full shapes."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (input,) = float32_operands(input)
    check_matrix("svd", input, complex_ok=True)
    if compute_uv:
        u, s, vh = _svd(input, full_matrices=not some)
        return SVD(u, s, mH_view(vh))
    m, n = input.shape[-2:]
    batch = input.shape[:-2]
    zeros = cr.zeros_like_shape
    return SVD(zeros(input, (*batch, m, m)), svdvals(input), zeros(input, (*batch, n, n)))


def cholesky(input: Tensor, upper: bool = False) -> Tensor:  # noqa: A002
    """``torch.cholesky``: ``tw.linalg.cholesky(input, upper=upper)``, recorded as PyTorch's
    own node."""
    return cholesky_recorded_as("CholeskyBackward0", input, upper)


def qr(input: Tensor, some: bool = True) -> tuple:  # noqa: A002
    """``torch.qr``: the reduced QR, or the complete one without ``some``."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (input,) = float32_operands(input)
    return QR(*_qr(input, "reduced" if some else "complete"))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:  # noqa: A002
    """``torch.pinverse``: ``tw.linalg.pinv`` with singular values up to ``rcond`` times
    the largest dropped."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32): in float32
        # throughout (linalg.pinv, which is not, lowers its matmul)
        return outside_autocast(pinverse, *float32_operands(input), rcond)
    return pinv(input, rtol=rcond)


def triangular_solve(
    input: Tensor,  # noqa: A002  (PyTorch's names)
    A: Tensor,
    upper: bool = True,
    transpose: bool = False,
    unitriangular: bool = False,
) -> tuple:
    """``torch.triangular_solve``: (X with A X = ``input``, or A^T X = ``input`` with
    ``transpose``; a copy of A)."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, A = float32_operands(input, A)
    static = (upper, transpose, unitriangular)
    if is_grad_enabled() and (input.requires_grad or A.requires_grad):
        # PyTorch's one node for both results, over (input, A) in that order, with its formula
        rule = functools.partial(_triangular_solve_rule, static)
        found = formula_call(
            "TriangularSolveBackward0", _triangular_solve, (input, A), static, (0, 1), rule
        )
        return TriangularSolve(*found)
    return TriangularSolve(*_triangular_solve(input, A, *static))


def _triangular_solve(
    b: Tensor, A: Tensor, upper: bool, transpose: bool, unitriangular: bool
) -> tuple[Tensor, Tensor]:
    a = mT(A) if transpose else A
    x = solve_triangular(a, b, upper=upper != transpose, unitriangular=unitriangular)
    # A's copy has the solution's batch, as PyTorch's (which broadcasts A before copying it)
    batched = (*x.shape[:-2], *A.shape[-2:])
    return x, (A if A.shape == batched else mv.expand(A, batched)).clone()


def _triangular_solve_rule(static: tuple, saved: tuple, grads: tuple) -> tuple:
    # (imported here: linalg_rules imports this package)
    from tensorweaver.autograd.linalg_rules import triangular_solve_backward

    return triangular_solve_backward(saved, grads, *static)


def orgqr(input: Tensor, input2: Tensor) -> Tensor:  # noqa: A002
    """``torch.orgqr``: ``tw.linalg.householder_product`` of ``input`` and the scales
    ``input2`` (tau)."""
    return householder_product(input, input2)


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple:
    """``torch.lu``: (LU, pivots), and the infos with ``get_infos`` (else an error for a
    singular matrix)."""
    factors, pivots, info = lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    return (factors, pivots, info) if get_infos else (factors, pivots)


def lu_solve_legacy(input: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: A002, N803
    """``torch.lu_solve``: ``tw.linalg.lu_solve(LU_data, LU_pivots, input)``."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, LU_data = float32_operands(input, LU_data)
    return lu_solve(LU_data, LU_pivots, input)


def det(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.det``: ``tw.linalg.det`` under PyTorch's older keyword name."""
    return _det(input)


def inverse(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.inverse``: ``tw.linalg.inv`` under PyTorch's older keyword name."""
    return inv(input)


def matrix_exp(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.matrix_exp``: ``tw.linalg.matrix_exp`` under PyTorch's older keyword name."""
    return _matrix_exp(input)


def lu_unpack(
    LU_data: Tensor,  # noqa: N803  (PyTorch's names)
    LU_pivots: Tensor,  # noqa: N803
    unpack_data: bool = True,
    unpack_pivots: bool = True,
) -> tuple:
    """``torch.lu_unpack``: (P, L, U) of ``lu_factor``'s result; a part not asked for is an
    empty tensor."""
    perm, lower, upper = unpack(LU_data, LU_pivots)
    lower = labelled(lower, "LuUnpackBackward0", LU_data)  # (torch's node of both factors)
    upper = labelled(upper, "LuUnpackBackward0", LU_data)
    empty = cr.zeros_like_shape(LU_data, (0,))
    return LUUnpack(
        perm if unpack_pivots else empty,
        lower if unpack_data else empty,
        upper if unpack_data else empty,
    )
