"""The optional linear algebra (tw.linalg: solve, cholesky, eigh, svd, ...) primitives of the
backend API 2.3 (see ``OPTIONAL`` in ``tensorweaver.contract.ir``), as this backend's library
computes them: each is one ``torch.linalg`` call."""

from __future__ import annotations

import torch


class LinearAlgebra:
    """Mixed into the backend class; each method is one optional primitive."""

    def linalg_cholesky_ex(self, a: torch.Tensor) -> tuple:
        return tuple(torch.linalg.cholesky_ex(a))

    def linalg_lu_factor_ex(self, a: torch.Tensor) -> tuple:
        return tuple(torch.linalg.lu_factor_ex(a))

    def linalg_solve_ex(self, a: torch.Tensor, b: torch.Tensor) -> tuple:
        return tuple(torch.linalg.solve_ex(a, b))

    def linalg_solve_triangular(
        self, a: torch.Tensor, b: torch.Tensor, upper: bool, unitriangular: bool
    ) -> torch.Tensor:
        return torch.linalg.solve_triangular(a, b, upper=upper, unitriangular=unitriangular)

    def linalg_qr(self, a: torch.Tensor, mode: str) -> tuple:
        return tuple(torch.linalg.qr(a, mode=mode))

    def linalg_eigh(self, a: torch.Tensor, uplo: str) -> tuple:
        return tuple(torch.linalg.eigh(a, UPLO=uplo))

    def linalg_svd(self, a: torch.Tensor, full_matrices: bool) -> tuple:
        return tuple(torch.linalg.svd(a, full_matrices=full_matrices))

    def linalg_det(self, a: torch.Tensor) -> torch.Tensor:
        return torch.linalg.det(a)

    def linalg_slogdet(self, a: torch.Tensor) -> tuple:
        return tuple(torch.linalg.slogdet(a))
