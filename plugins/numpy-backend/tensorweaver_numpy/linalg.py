"""The optional linear algebra (tw.linalg: solve, cholesky, eigh, svd, ..., and tril/triu)
primitives of the backend API 2.3 and 2.4 (see ``OPTIONAL`` in ``tensorweaver.contract.ir``),
as this backend's library computes them.

NumPy has no LU factorization nor triangular solve, and its ``cholesky`` and ``solve`` raise
for a whole batch without saying which matrix failed or where (LAPACK's ``info``): those
four primitives are the core's host code, which finds out (on NumPy's own arrays the host
fallback gives no warning).
"""

from __future__ import annotations

import numpy as np
from tensorweaver.contract.errors import LinAlgError

from tensorweaver_numpy._quiet import quiet


class LinearAlgebra:
    """Mixed into the backend class; each method is one optional primitive."""

    def linalg_qr(self, a: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
        return tuple(np.linalg.qr(a, mode=mode))

    def linalg_eigh(self, a: np.ndarray, uplo: str) -> tuple[np.ndarray, np.ndarray]:
        return tuple(np.linalg.eigh(a, UPLO=uplo))

    def linalg_eig(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # NumPy returns real arrays where every eigenvalue is real: the contract's are complex
        try:
            values, vectors = np.linalg.eig(a)
        except np.linalg.LinAlgError:  # NaN or inf: torch's eig refuses them up front too
            message = "torch.linalg.eig: input tensor should not contain infs or NaNs."
            raise RuntimeError(message) from None
        kind = np.result_type(a.dtype, np.complex64)
        return values.astype(kind, copy=False), vectors.astype(kind, copy=False)

    def linalg_svd(
        self, a: np.ndarray, full_matrices: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        try:
            return tuple(np.linalg.svd(a, full_matrices=full_matrices))
        except np.linalg.LinAlgError:  # only non-finite input keeps LAPACK from converging
            raise LinAlgError(
                "linalg.svd: The algorithm failed to converge because the input matrix "
                "contained non-finite values."
            ) from None

    @quiet  # NaN and overflowing determinants warn in NumPy; torch gives them silently
    def linalg_det(self, a: np.ndarray) -> np.ndarray:
        return np.asarray(np.linalg.det(a), a.dtype)

    @quiet
    def linalg_slogdet(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sign, logabs = np.linalg.slogdet(a)
        # log|det| is real for complex matrices too, of their precision
        return np.asarray(sign, a.dtype), np.asarray(logabs, np.zeros((), a.dtype).real.dtype)

    # np.tril/np.triu keep their operand's memory order; torch's results are C ordered
    def tril(self, a: np.ndarray, k: int) -> np.ndarray:
        return np.ascontiguousarray(np.tril(a, k))

    def triu(self, a: np.ndarray, k: int) -> np.ndarray:
        return np.ascontiguousarray(np.triu(a, k))
