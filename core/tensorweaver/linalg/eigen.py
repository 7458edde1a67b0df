"""Eigendecompositions (symmetric and general) and the singular value decomposition."""

from __future__ import annotations

from tensorweaver.amp import autocast_dtype, float32_operands
from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.contract.dtypes import DType
from tensorweaver.linalg import primitives as p
from tensorweaver.linalg._shared import result
from tensorweaver.linalg.decomposition_gradients import eigh_rule, svd_rule
from tensorweaver.linalg.eig_gradient import eig_backward
from tensorweaver.linalg.errors import check_matrix, check_square
from tensorweaver.linalg.fused import REAL, fused_or_reference
from tensorweaver.ops import complex as cx
from tensorweaver.ops.complex import supports_complex
from tensorweaver.tensor import Tensor

Eigh = result("linalg_eigh", "eigenvalues", "eigenvectors")
Eig = result("linalg_eig", "eigenvalues", "eigenvectors")
SVD = result("linalg_svd", "U", "S", "Vh")


def _uplo(name: str, UPLO: str) -> str:  # noqa: N803  (PyTorch's name)
    """'L' or 'U', read as PyTorch reads it: in either case."""
    if not isinstance(UPLO, str):
        raise TypeError(f"{name}(): argument 'UPLO' must be str, not {type(UPLO).__name__}")
    if UPLO.upper() not in ("L", "U"):
        raise RuntimeError(f"{name}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def eigh(A: Tensor, UPLO: str = "L") -> tuple:  # noqa: N803
    """(eigenvalues ascending, eigenvectors as columns) of each symmetric matrix, read from
    its lower (``UPLO='L'``) or upper triangle. Gradients through the eigenvectors are
    finite only where the eigenvalues are distinct (PyTorch's rule)."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (A,) = float32_operands(A)
    check_square("linalg.eigh", A, complex_ok=True)
    uplo = _uplo("linalg.eigh", UPLO)
    return Eigh(*_eigh(A, uplo))


def _eigh(A: Tensor, uplo: str) -> tuple:  # noqa: N803
    return fused_or_reference("eigh", _EIGH, p.eigh, (A,), (uplo,), (REAL, None), formula=eigh_rule)


#: PyTorch's grad_fn names of eigh's and svd's outputs (eigvalsh's and svdvals' too).
_EIGH, _SVD = "LinalgEighBackward0", "LinalgSvdBackward0"


def _eigvalsh(A: Tensor, uplo: str) -> tuple[Tensor]:
    return (p.eigh(A, uplo)[0],)


def _svdvals(A: Tensor) -> tuple[Tensor]:
    return (p.svd(A, False)[1],)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The eigenvalues of each symmetric matrix, ascending."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (A,) = float32_operands(A)
    check_square("linalg.eigvalsh", A, complex_ok=True)
    uplo = _uplo("linalg.eigvalsh", UPLO)
    if A.requires_grad and is_grad_enabled():
        # PyTorch's node is eigh's, which saves (and packs) the eigenvalues and vectors
        return _eigh(A, uplo)[0]
    return fused_or_reference("eigvalsh", _EIGH, _eigvalsh, (A,), (uplo,), (REAL,))[0]


def _check_eig(name: str, A: Tensor) -> DType:  # noqa: N803
    """The complex dtype of ``name``'s results, after PyTorch's checks of ``A``."""
    check_square(name, A, complex_ok=True)
    if not supports_complex(A.backend):
        raise RuntimeError(
            f"{name}: its results are complex, and the backend of {A.device} has no complex "
            "dtypes; move the tensor to a backend that has them (numpy, torch)"
        )
    return A.dtype.to_complex()


def eig(A: Tensor) -> tuple:  # noqa: N803
    """(eigenvalues, eigenvectors as columns) of each square matrix, complex whatever
    ``A``'s dtype (complex64 for float32), in LAPACK's order; each eigenvector has unit
    norm, its phase unspecified. Gradients are PyTorch's: finite only where the eigenvalues
    are distinct, and an error where the loss depends on the eigenvectors' phases."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (A,) = float32_operands(A)
    dtype = _check_eig("linalg.eig", A)
    return Eig(*_eig(A, dtype))


def _eig(A: Tensor, dtype: DType) -> tuple:  # noqa: N803
    return fused_or_reference(
        "eig", _EIG, p.eig, (A,), (), (None, None), dtype, formula=_eig_formula
    )


def _eig_formula(saved: tuple, grads: tuple) -> tuple:
    """The rule of linalg.eig's one node (``saved``: A, L, V): a real A's gradient is the
    real part of the complex one, as PyTorch's."""
    a, values, vectors = saved
    ga = eig_backward(values, vectors, *grads)
    return (ga if a.dtype.is_complex else cx.real(ga),)


#: PyTorch's grad_fn name of eig's and eigvals' outputs.
_EIG = "LinalgEigBackward0"


def _eigvals(A: Tensor) -> tuple[Tensor]:  # noqa: N803
    return (p.eig(A)[0],)


def eigvals(A: Tensor) -> Tensor:  # noqa: N803
    """The eigenvalues of each square matrix, complex, in :func:`eig`'s order."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (A,) = float32_operands(A)
    dtype = _check_eig("linalg.eigvals", A)
    if A.requires_grad and is_grad_enabled():
        # PyTorch's eigvals with a graph is eig's, whose node saves L and V, never A: an
        # in-place change of A is no error, and create_graph's formula reads them
        return _eig(A, dtype)[0]
    return fused_or_reference("eigvals", _EIG, _eigvals, (A,), (), (None,), dtype)[0]


def _no_driver(name: str, driver: str | None) -> None:
    if driver is not None:
        raise RuntimeError(
            f"torch.{name}: keyword argument `driver=` is only supported on CUDA inputs with "
            "cuSOLVER backend (leave it out here)"
        )


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None) -> tuple:
    """(U, S, Vh) with A = U diag(S) Vh, S descending; ``full_matrices`` makes U and Vh
    square. Gradients through U and Vh are finite only where the singular values are
    distinct (and nonzero where m != n), PyTorch's rule."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (A,) = float32_operands(A)
    check_matrix("linalg.svd", A, complex_ok=True)
    _no_driver("linalg.svd", driver)
    return SVD(*_svd(A, full_matrices))


def _svd(A: Tensor, full_matrices: bool) -> tuple:  # noqa: N803
    kinds = (None, REAL, None)
    return fused_or_reference("svd", _SVD, p.svd, (A,), (full_matrices,), kinds, formula=svd_rule)


def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """The singular values of each matrix, descending."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (A,) = float32_operands(A)
    check_matrix("linalg.svdvals", A, complex_ok=True)
    _no_driver("linalg.svdvals", driver)
    if A.requires_grad and is_grad_enabled():
        # PyTorch's node is svd's, which saves (and packs) U, S and Vh
        return _svd(A, False)[1]
    return fused_or_reference("svdvals", _SVD, _svdvals, (A,), (), (REAL,))[0]
