"""``tw.linalg``: PyTorch's ``torch.linalg`` for float32, float64, complex64 and complex128
tensors, batched over leading dimensions, with PyTorch's ``out=``.

A few factorizations are backend primitives (optional, API 2.3: Cholesky, LU, QR, eigh, SVD,
general and triangular solves, det/slogdet; eig, API 2.4), computed on the host with NumPy
where a backend has no kernel; everything else is composed from them and the tensor ops,
and every gradient follows PyTorch's rules (``tensorweaver.autograd.linalg_rules``). A
backend that has PyTorch's own kernels computes most functions whole instead, with their
gradients (``linalg_function``, API 2.4; see ``tensorweaver.linalg.fused``).
"""

from __future__ import annotations

from tensorweaver.linalg.determinants import det
from tensorweaver.linalg.determinants import linalg_slogdet as slogdet
from tensorweaver.linalg.eigen import eig, eigh, eigvals, eigvalsh, svd, svdvals
from tensorweaver.linalg.errors import LinAlgError
from tensorweaver.linalg.factorizations import (
    cholesky,
    cholesky_ex,
    householder_product,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    qr,
)
from tensorweaver.linalg.ldl import ldl_factor, ldl_factor_ex, ldl_solve
from tensorweaver.linalg.norms import cond, matrix_norm, norm, vector_norm
from tensorweaver.linalg.out import with_out
from tensorweaver.linalg.products import (
    cross,
    diagonal,
    matrix_exp,
    matrix_power,
    multi_dot,
    vander,
    vecdot,
)
from tensorweaver.linalg.solvers import (
    inv,
    inv_ex,
    lstsq,
    matrix_rank,
    pinv,
    solve,
    solve_ex,
    solve_triangular,
    tensorinv,
    tensorsolve,
)
from tensorweaver.ops.linalg import matmul

# PyTorch's out= where torch.linalg has it (not lstsq, matrix_exp, vander, diagonal;
# solve_triangular takes it itself). The core calls the functions above without it.
_NAMES = (
    "cholesky cholesky_ex cond cross det eig eigh eigvals eigvalsh householder_product inv "
    "inv_ex ldl_factor ldl_factor_ex ldl_solve lu lu_factor lu_factor_ex lu_solve matmul "
    "matrix_norm matrix_power matrix_rank "
    "multi_dot norm pinv qr slogdet solve solve_ex svd svdvals tensorinv "
    "tensorsolve vecdot vector_norm"
)
#: Those PyTorch composes of others: their out= takes inputs that require grad.
_COMPOSITE = ("cond", "eigvals", "matrix_norm", "matrix_rank", "norm", "tensorinv", "tensorsolve")
#: Those whose out= PyTorch fills by a copy: it takes any dtype the result casts to.
_CAST = ("cond eig eigvals householder_product matrix_rank pinv tensorinv tensorsolve").split()
globals().update(
    {
        n: with_out(f"linalg.{n}", globals()[n], composite=n in _COMPOSITE, cast=n in _CAST)
        for n in _NAMES.split()
    }
)

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "householder_product",
    "inv",
    "inv_ex",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "vector_norm",
]
