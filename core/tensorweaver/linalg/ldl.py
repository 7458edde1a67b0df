"""``tw.linalg.ldl_factor``, ``ldl_factor_ex`` and ``ldl_solve``: the LDL^T (LDL^H where
``hermitian``) factorization of symmetric indefinite matrices with Bunch-Kaufman pivoting,
in LAPACK's compact layout, and solving with it. Not differentiable, as PyTorch's."""

from __future__ import annotations

from tensorweaver.contract import dtypes
from tensorweaver.linalg import ldl_host
from tensorweaver.linalg._shared import result
from tensorweaver.linalg.errors import LinAlgError, check_square
from tensorweaver.ops.apply import broadcast_shapes
from tensorweaver.ops.host_fallback import run_optional
from tensorweaver.ops.order_stats import NO_DERIVATIVE, no_derivative
from tensorweaver.tensor import Tensor

LDLFactor = result("linalg_ldl_factor", "LD", "pivots")
LDLFactorEx = result("linalg_ldl_factor_ex", "LD", "pivots", "info")


def ldl_factor_ex(
    A: Tensor,  # noqa: N803
    *,
    hermitian: bool = False,
    check_errors: bool = False,
) -> tuple:
    """(LD, pivots, info): L (unit, below the diagonal) and the 1x1 / 2x2 blocks of D (on
    and next to it) with A = P L D L^T P^T; ``pivots`` one-based, a negative pair for a 2x2
    block; ``info`` k > 0 where D's k-th diagonal entry is exactly zero."""
    check_square("torch.linalg.ldl_factor_ex", A, complex_ok=True)
    ld, pivots, info = run_optional(
        A.backend, "linalg_ldl_factor_ex", ldl_host.ldl_factor_ex, A.dtype, A.native, hermitian
    )
    error = RuntimeError(NO_DERIVATIVE.format("linalg_ldl_factor_ex"))
    out = LDLFactorEx(
        no_derivative(Tensor(ld, A.backend, A.dtype), (A,), error),
        Tensor(pivots, A.backend, dtypes.int32),
        Tensor(info, A.backend, dtypes.int32),
    )
    if check_errors:
        _raise_for_info("torch.linalg.ldl_factor_ex", out.info)
    return out


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> tuple:  # noqa: N803
    """(LD, pivots) of :func:`ldl_factor_ex`; an error where D is singular."""
    ld, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_for_info("torch.linalg.ldl_factor", info)
    return LDLFactor(ld, pivots)


def _raise_for_info(fn: str, info: Tensor) -> None:
    if info.numel() and int(info.amax().item()) > 0:
        raise LinAlgError(
            f"{fn}: The factorization could not be completed because the block diagonal "
            f"factor D is singular (info = {info.tolist()}); use ldl_factor_ex to inspect it"
        )


def ldl_solve(
    LD: Tensor,  # noqa: N803
    pivots: Tensor,
    B: Tensor,  # noqa: N803
    *,
    hermitian: bool = False,
) -> Tensor:
    """X with A X = B, from ``ldl_factor``'s LD and pivots of A (batches broadcast)."""
    fn = "torch.linalg.ldl_solve"
    check_square(fn, LD, "LD", complex_ok=True)
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):  # exactly, as PyTorch's: no broadcasting
        raise RuntimeError(
            f"{fn}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots "
            f"with shape {list(pivots.shape)} and LD with shape {list(LD.shape)}"
        )
    if B.ndim < 2:  # PyTorch reads B.size(-2): an IndexError
        raise IndexError(f"{fn}: B must have at least 2 dimensions, got shape {list(B.shape)}")
    if pivots.dtype.is_floating_point or pivots.dtype.is_complex or pivots.dtype is dtypes.bool:
        raise RuntimeError(f"{fn}: Expected pivots to be integers. Got {pivots.dtype.name}")
    if B.dtype is not LD.dtype:
        raise RuntimeError(
            f"{fn}: Expected b and A to have the same dtype, but found b of type "
            f"{B.dtype.name} and A of type {LD.dtype.name} instead."
        )
    if B.shape[-2] != LD.shape[-1]:
        raise RuntimeError(
            f"Incompatible matrix sizes for {fn}: each A matrix is {LD.shape[-1]} by "
            f"{LD.shape[-1]} but each b matrix is {B.shape[-2]} by {B.shape[-1]}"
        )
    broadcast_shapes(fn, LD.shape[:-2], B.shape[:-2])  # a RuntimeError where they do not
    x = run_optional(
        LD.backend,
        "linalg_ldl_solve",
        ldl_host.ldl_solve,
        LD.dtype,
        LD.native,
        pivots.native,
        B.native,
        hermitian,
    )
    error = RuntimeError(NO_DERIVATIVE.format("linalg_ldl_solve"))
    return no_derivative(Tensor(x, LD.backend, LD.dtype), (LD, B), error)
