"""Symmetric eigendecomposition and the singular value decomposition."""

from __future__ import annotations

from tensorweaver.linalg import primitives as p
from tensorweaver.linalg._shared import result
from tensorweaver.linalg.errors import check_matrix, check_square
from tensorweaver.tensor import Tensor

Eigh = result("linalg_eigh", "eigenvalues", "eigenvectors")
SVD = result("linalg_svd", "U", "S", "Vh")


def _uplo(name: str, UPLO: str) -> str:  # noqa: N803  (PyTorch's name)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"{name}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO


def eigh(A: Tensor, UPLO: str = "L") -> tuple:  # noqa: N803
    """(eigenvalues ascending, eigenvectors as columns) of each symmetric matrix, read from
    its lower (``UPLO='L'``) or upper triangle. Gradients through the eigenvectors are
    finite only where the eigenvalues are distinct (PyTorch's rule)."""
    check_square("linalg.eigh", A)
    return Eigh(*p.eigh(A, _uplo("linalg.eigh", UPLO)))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The eigenvalues of each symmetric matrix, ascending."""
    check_square("linalg.eigvalsh", A)
    return p.eigh(A, _uplo("linalg.eigvalsh", UPLO))[0]


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
    check_matrix("linalg.svd", A)
    _no_driver("linalg.svd", driver)
    return SVD(*p.svd(A, full_matrices))


def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """The singular values of each matrix, descending."""
    check_matrix("linalg.svdvals", A)
    _no_driver("linalg.svdvals", driver)
    return p.svd(A, False)[1]
