"""Factorizations: Cholesky, QR, LU (and solving with it), Householder products."""

from __future__ import annotations

import math

import numpy as np

from tensorweaver.amp import autocast_dtype, float32_operands
from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.node import saves_integer_output
from tensorweaver.contract import dtypes
from tensorweaver.linalg import primitives as p
from tensorweaver.linalg._shared import eye_like, mH, mH_view, mT, result, to_batch
from tensorweaver.linalg.decomposition_gradients import lu_rule, qr_rule
from tensorweaver.linalg.errors import check_matrix, check_square, raise_for_info
from tensorweaver.linalg.fused import WITH_INFO, fused_or_reference
from tensorweaver.linalg.householder import reflector
from tensorweaver.linalg.one_node import formula_call, one_node
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops.apply import broadcast_shapes, labelled
from tensorweaver.ops.linalg import matmul
from tensorweaver.tensor import Tensor

CholeskyEx = result("linalg_cholesky_ex", "L", "info")
QR = result("linalg_qr", "Q", "R")
LU = result("linalg_lu", "P", "L", "U")
LUFactor = result("linalg_lu_factor", "LU", "pivots")
LUFactorEx = result("linalg_lu_factor_ex", "LU", "pivots", "info")


def _not_pd(order: int) -> str:
    return (
        "The factorization could not be completed because the input is not positive-definite "
        f"(the leading minor of order {order} is not positive-definite)."
    )


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> tuple:
    """(L, info): the Cholesky factor of each matrix (from its lower triangle, or its upper one
    with ``upper``) and LAPACK's info (the order of the first leading minor that is not
    positive-definite, else 0)."""
    factor, info = _cholesky_with_info(A, upper)
    if check_errors:
        raise_for_info("linalg.cholesky_ex", info, _not_pd)
    return CholeskyEx(factor, info)


def _cholesky_with_info(A: Tensor, upper: bool) -> tuple[Tensor, Tensor]:
    return fused_or_reference(
        "cholesky_ex",
        "LinalgCholeskyExBackward0",
        _cholesky_ex,
        (_cholesky_operand(A),),
        (upper,),
        WITH_INFO,
    )


def _cholesky_operand(A: Tensor) -> Tensor:
    """``A`` checked, in float32 under autocast (on PyTorch's CPU list, amp.CPU_FLOAT32)."""
    if autocast_dtype() is not None:
        (A,) = float32_operands(A)
    check_square("linalg.cholesky", A, complex_ok=True)
    return A


def _cholesky_ex(A: Tensor, upper: bool) -> tuple[Tensor, Tensor]:
    if not upper:
        return p.cholesky_ex(A)
    # PyTorch reads the upper triangle when asked for U: the lower one of A^H. Its gradient
    # is the lower factor's rule at that factor, with no transpose of A on the way back.
    with no_grad():
        factor, info = p.cholesky_ex(mH(A))
    factor = p.composite("linalg_cholesky", factor, A)
    # A real U is a tracked transposed view of the factor the node keeps, so that a write
    # through U.data reaches it, as torch's U is its saved result; a complex one is computed
    # (a conjugate view would have the conjugate bit torch's U has not)
    upper_factor = mH(factor) if A.dtype.is_complex else factor.mT
    return labelled(upper_factor, "LinalgCholeskyExBackward0", A), info


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor L (A = L L^T), or U = L^T with ``upper``; LinAlgError naming the
    batch element where A is not positive-definite."""
    return cholesky_recorded_as("LinalgCholeskyExBackward0", A, upper)


def cholesky_recorded_as(grad_fn: str, A: Tensor, upper: bool) -> Tensor:
    """:func:`cholesky`'s factor, its node named ``grad_fn`` (``torch.cholesky``'s is
    CholeskyBackward0)."""
    # A backend computing torch.linalg.cholesky whole checks its info itself, with this
    # error (no read of the info on the host: 1 us a call)
    return fused_or_reference(
        "cholesky",
        grad_fn,
        _checked_cholesky,
        (_cholesky_operand(A),),
        (upper,),
        (None,),
    )[0]


def _checked_cholesky(A: Tensor, upper: bool) -> tuple:
    factor, info = _cholesky_ex(A, upper)
    raise_for_info("linalg.cholesky", info, _not_pd)
    return (factor,)


def qr(A: Tensor, mode: str = "reduced") -> tuple:
    """(Q, R) with A = Q R; ``mode`` 'reduced', 'complete' or 'r' (Q empty)."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (A,) = float32_operands(A)
    check_matrix("linalg.qr", A, complex_ok=True)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    if mode != "r":
        found = fused_or_reference(
            "qr", "LinalgQrBackward0", p.qr, (A,), (mode,), (None, None), formula=qr_rule
        )
        return QR(*found)
    q, r = cr.zeros_like_shape(A, (0,)), p.qr(A.detach(), "reduced")[1]
    if A.requires_grad and is_grad_enabled():  # PyTorch's one node for the empty Q and R
        one_node("LinalgQrBackward0", (A,), (q, r), (0, 1), (_qr_r_backward, ()), _qr_r_backward)
    return QR(q, r)


def _qr_r_backward(*_: object) -> tuple:
    """The gradient of mode 'r' (first-order and under create_graph): refused, as PyTorch's,
    for any output's gradient, the empty Q's too."""
    raise RuntimeError(
        "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
        "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
        "linalg.qr."
    )


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> tuple:
    """(LU, pivots, info): LAPACK's getrf of each matrix (pivots 1-based, int32)."""
    _check_lu_operand(A, pivot)
    lu, pivots, info = fused_or_reference(
        "lu_factor_ex",
        "LinalgLuFactorExBackward0",
        p.lu_factor_ex,
        (A,),
        (),
        (None, dtypes.int32, dtypes.int32),
    )
    if check_errors:  # a RuntimeError in PyTorch, not a LinAlgError
        raise_for_info("torch.linalg.lu_factor_ex", info, _zero_pivot, RuntimeError)
    saves_integer_output(lu, pivots)  # (PyTorch's node saves the pivots)
    return LUFactorEx(lu, pivots, info)


def _check_lu_operand(A: Tensor, pivot: bool) -> None:
    check_matrix("linalg.lu_factor_ex", A, complex_ok=True)
    _check_pivot(pivot)


def _check_pivot(pivot: bool) -> None:
    if not pivot:
        raise RuntimeError(
            "linalg.lu_factor: LU without pivoting is not implemented on the CPU; use pivot=True"
        )


def _zero_pivot(k: int) -> str:
    return (
        f"U[{k},{k}] is zero and using it on lu_solve would result in a division by zero. If "
        "you still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
        "linalg.lu_factor_ex(A, pivot)"
    )


def lu_factor(A: Tensor, *, pivot: bool = True) -> tuple:
    """(LU, pivots); a RuntimeError naming the batch element where U has a zero pivot."""
    _check_lu_operand(A, pivot)
    # A backend computing torch.linalg.lu_factor whole checks its info itself, with this
    # error (no read of the info on the host: 1 us a call)
    lu, pivots = fused_or_reference(
        "lu_factor", "LinalgLuFactorExBackward0", _checked_lu_factor, (A,), (), (None, dtypes.int32)
    )
    saves_integer_output(lu, pivots)  # (PyTorch's node saves the pivots)
    return LUFactor(lu, pivots)


def _checked_lu_factor(A: Tensor) -> tuple:
    lu, pivots, info = p.lu_factor_ex(A)
    raise_for_info("torch.linalg.lu_factor", info, _zero_pivot, RuntimeError)
    return lu, pivots


def permutation(pivots: Tensor, m: int, like: Tensor) -> Tensor:
    """P (m x m, of ``like``'s dtype) with A = P L U, from LAPACK's row swaps ``pivots``."""
    swaps = np.asarray(pivots.backend.to_host(pivots.native)).astype(np.int64) - 1
    batch = swaps.shape[:-1]
    swaps = swaps.reshape(math.prod(batch), swaps.shape[-1])
    order = np.tile(np.arange(m), (len(swaps), 1))
    rows = np.arange(len(swaps))
    for i in range(swaps.shape[-1]):
        here, there = order[:, i].copy(), order[rows, swaps[:, i]].copy()
        order[:, i], order[rows, swaps[:, i]] = there, here
    # Row i of P^T A is row order[i] of A, so P[order[i], i] = 1
    perm = np.zeros((len(swaps), m, m))
    perm[rows[:, None], order, np.arange(m)] = 1
    return cr.tensor(perm.reshape((*batch, m, m)), dtype=like.dtype, device=like.device)


def unpack(lu: Tensor, pivots: Tensor) -> tuple:
    """(P, L, U) of a packed LU factorization (``torch.lu_unpack``)."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    lower = ew.add(mv.tril(mv.narrow(lu, -1, 0, k), -1), eye_like(lu, m, k))
    upper = mv.triu(mv.narrow(lu, -2, 0, k))
    return LU(permutation(pivots, m, lu), lower, upper)


def lu(A: Tensor, *, pivot: bool = True) -> tuple:
    """(P, L, U) with A = P L U: L unit lower (m x k), U upper (k x n)."""
    check_matrix("linalg.lu", A, complex_ok=True)
    _check_pivot(pivot)
    if A.requires_grad and is_grad_enabled():
        # PyTorch's node of saved outputs: backward reads P, L and U (a write through their
        # ``.data`` reaches it; saved_tensors_hooks pack them), P kept beside L and U
        found = formula_call("LinalgLuBackward0", _lu_kept, (A,), (), (1, 2), lu_rule, 1, True)
        return LU(*found)
    return LU(*_lu_whole(A))


def _lu_whole(A: Tensor) -> tuple:
    """P, L, U: the backend's whole call where it has one, else the core's."""
    return fused_or_reference("lu", "LinalgLuBackward0", _lu, (A,), (), (A.dtype, None, None))


def _lu(A: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    factors, pivots, _ = p.lu_factor_ex(A)
    return unpack(factors, pivots)


def _lu_kept(A: Tensor) -> tuple:
    """P, L, U, and P again: what linalg.lu's formula reads beyond its differentiable L, U."""
    found = _lu_whole(A)
    return (*found, found[0])


def lu_solve(
    LU: Tensor,  # noqa: N803  (PyTorch's name)
    pivots: Tensor,
    B: Tensor,
    *,
    left: bool = True,
    adjoint: bool = False,
) -> Tensor:
    """X with A X = B (A^H X = B with ``adjoint``; X A = B without ``left``) from
    ``lu_factor``'s result."""
    check_square("linalg.lu_solve", LU, "LU", complex_ok=True)
    _check_lu_solve(LU, pivots, B, left)
    return fused_or_reference(
        "lu_solve", "LinalgLuSolveBackward0", _lu_solve, (LU, pivots, B), (left, adjoint), (None,)
    )[0]


def _check_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, left: bool) -> None:  # noqa: N803
    """PyTorch's checks of B's and the pivots' shapes and the pivots' dtype."""
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(
            f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})"
        )
    if pivots.ndim == 0 or pivots.shape[-1] != n:
        raise RuntimeError(
            "linalg.lu_solve: Number of pivots per batch should be same as the dimension of the "
            f"matrix (pivots of shape {list(pivots.shape)}, LU of shape {list(LU.shape)})"
        )
    if pivots.dtype is not dtypes.int32:
        raise RuntimeError(
            "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32 (got "
            f"{pivots.dtype.name}; lu_factor returns them so)"
        )


def _lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, left: bool, adjoint: bool) -> tuple:
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return (mH_view(_lu_solve(LU, pivots, mH(B), True, not adjoint)[0]),)
    batch = broadcast_shapes("linalg.lu_solve", LU.shape[:-2], B.shape[:-2])
    perm, lower, upper, B = (to_batch(x, batch) for x in (*unpack(LU, pivots), B))
    if adjoint:  # U^H L^H P^T X = B
        y = p.solve_triangular(mH(upper), B, False, False)
        return (matmul(perm, p.solve_triangular(mH(lower), y, True, True)),)
    y = p.solve_triangular(lower, matmul(mT(perm), B), False, True)
    return (p.solve_triangular(upper, y, True, False),)


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H, v_i column i of A
    below the diagonal with 1 on it (LAPACK's orgqr)."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        A, tau = float32_operands(A, tau)
    check_matrix("linalg.householder_product", A, complex_ok=True)
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    if n > m or k > n:
        raise RuntimeError(
            "torch.linalg.householder_product: input.shape[-2] must be greater than or equal "
            f"to input.shape[-1] and input.shape[-1] must be >= tau.shape[-1], got A of shape "
            f"{list(A.shape)} and tau of shape {list(tau.shape)}"
        )
    return fused_or_reference(
        "householder_product",
        "LinalgHouseholderProductBackward0",
        _householder_product,
        (A, tau),
        (),
        (None,),
    )[0]


def _householder_product(A: Tensor, tau: Tensor) -> tuple:
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    q = mv.expand(eye_like(A, m, n), A.shape)
    if k == 0:  # no reflectors: the identity, still an output of A and tau (as PyTorch's)
        empty = ew.add(mv.narrow(A, -1, 0, 0), mv.unsqueeze(tau, -2))  # (..., m, 0)
        q = ew.add(q, rd.sum(empty, (-2, -1), keepdim=True))
    for i in reversed(range(k)):
        v = reflector(A, i)
        t = mv.unsqueeze(mv.narrow(tau, -1, i, 1), -1)
        q = ew.sub(q, ew.mul(t, matmul(v, matmul(mH(v), q))))
    return (q,)
