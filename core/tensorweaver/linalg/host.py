"""The host (NumPy) computation of each linalg primitive, for backends without a kernel
(and the NumPy backend's own for those NumPy's LAPACK calls cannot report ``info`` for).

Each function takes and returns NumPy arrays with the primitive's signature (see the
``linalg_*`` rows of ``OPTIONAL`` in :mod:`tensorweaver.contract.ir`); integer outputs
(``info``, ``pivots``) are int32, as in LAPACK and PyTorch.
"""

from __future__ import annotations

import math

import numpy as np


def _flat(a: np.ndarray) -> np.ndarray:
    """The batch of matrices as one axis (``math.prod``, since -1 is ambiguous when empty)."""
    return a.reshape((math.prod(a.shape[:-2]), *a.shape[-2:]))


def lu_factor_ex(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LAPACK getrf over a batch: partial pivoting, one Python step per column."""
    lu = _flat(np.array(a, copy=True))
    b, m, n = lu.shape
    k = min(m, n)
    pivots = np.zeros((b, k), np.int32)
    info = np.zeros(b, np.int32)
    rows = np.arange(b)
    # LAPACK's pivot is the largest |re| + |im| (cabs1), the modulus only for real numbers
    size = (lambda z: np.abs(z.real) + np.abs(z.imag)) if np.iscomplexobj(lu) else np.abs
    for j in range(k):
        p = j + np.argmax(size(lu[:, j:, j]), axis=1) if m > j else np.full(b, j)
        pivots[:, j] = p + 1
        top, pivot_row = lu[rows, j].copy(), lu[rows, p].copy()
        lu[rows, j], lu[rows, p] = pivot_row, top
        d = lu[:, j, j]
        zero = d == 0
        info[(info == 0) & zero] = j + 1
        # A zero pivot leaves its column as it is (LAPACK goes on with the next one)
        scale = np.where(zero, 0, 1 / np.where(zero, 1, d))
        lu[:, j + 1 :, j] *= scale[:, None]
        lu[:, j + 1 :, j + 1 :] -= lu[:, j + 1 :, j : j + 1] * lu[:, j : j + 1, j + 1 :]
    shape = a.shape[:-2]
    return lu.reshape(a.shape), pivots.reshape((*shape, k)), info.reshape(shape)


def cholesky_ex(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lower Cholesky factor from the lower triangle, and LAPACK's info: the order of
    the first leading minor that is not positive-definite (0 where none)."""
    flat = _flat(a)
    try:
        out = np.linalg.cholesky(flat)
        info = np.zeros(len(flat), np.int32)
    except np.linalg.LinAlgError:  # some matrix is not positive-definite: NumPy does not
        out = np.zeros_like(flat)  # say which
        info = np.zeros(len(flat), np.int32)
        for i, m in enumerate(flat):
            try:
                out[i] = np.linalg.cholesky(m)
            except np.linalg.LinAlgError:
                info[i] = next(k for k in range(1, len(m) + 1) if not _definite(m[:k, :k]))
                out[i] = np.nan
    # LAPACK stops at a NaN pivot (its test: ajj <= 0 or NaN) where NumPy's carries on, and
    # NumPy's blocked potrf makes no NaN of inf / inf: such matrices take LAPACK's own steps
    for i in np.flatnonzero(~np.isfinite(np.tril(flat)).all((-2, -1))):
        info[i] = _pivot_info(flat[i])
        if info[i]:
            out[i] = np.nan
    return out.reshape(a.shape), info.reshape(a.shape[:-2])


def _pivot_info(m: np.ndarray) -> int:
    """LAPACK's potf2 on one matrix with non-finite entries: the order of the first pivot
    that is not positive (or NaN), else 0."""
    n = len(m)
    low = np.zeros_like(m)
    with np.errstate(all="ignore"):
        for j in range(n):
            pivot = np.real(m[j, j] - low[j, :j] @ np.conj(low[j, :j]))
            if not pivot > 0:
                return j + 1
            low[j, j] = np.sqrt(pivot)
            low[j + 1 :, j] = (m[j + 1 :, j] - low[j + 1 :, :j] @ np.conj(low[j, :j])) / low[j, j]
    return 0


def _definite(m: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return False
    return True


def solve_ex(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """X with A X = B (B a batch of matrices of A's batch shape), and the LU's info; X's
    matrices column-major, as LAPACK (and so torch) leaves them (a transpose of X, as
    ``solve(left=False)`` returns, is then contiguous, as torch's)."""
    try:
        return _column_major(np.linalg.solve(a, b)), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        pass  # some matrix is singular: LAPACK's info says which, and where
    lu, pivots, info = lu_factor_ex(a)
    good = info == 0
    x = np.full(b.shape, np.nan, np.result_type(a, b))
    if good.any():
        # NumPy's LAPACK may meet an exact zero pivot where this LU's rounding did not:
        # those are solved with this LU, which decided they are not singular
        x[good] = _lu_solve(lu[good], pivots[good], b[good])
    return _column_major(x), info


def _column_major(x: np.ndarray) -> np.ndarray:
    """``x``'s values with each matrix stored column by column (batches stay outermost)."""
    return np.swapaxes(np.ascontiguousarray(np.swapaxes(x, -1, -2)), -1, -2)


def _lu_solve(lu: np.ndarray, pivots: np.ndarray, b: np.ndarray) -> np.ndarray:
    """X with P L U X = B, from ``lu_factor_ex``'s factors (one-based row swaps)."""
    x = np.array(b, copy=True)
    rows = np.arange(len(x))
    for j in range(pivots.shape[-1]):
        p = pivots[:, j] - 1
        top, other = x[rows, j].copy(), x[rows, p].copy()
        x[rows, j], x[rows, p] = other, top
    x = solve_triangular(lu, x, upper=False, unitriangular=True)
    return solve_triangular(lu, x, upper=True, unitriangular=False)


def solve_triangular(a: np.ndarray, b: np.ndarray, upper: bool, unitriangular: bool) -> np.ndarray:
    """X with A X = B, reading only A's upper or lower triangle (and 1 on its diagonal); a
    zero on the diagonal gives inf and NaN, as LAPACK's trsm does, not an error."""
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        eye = np.eye(a.shape[-1], dtype=t.dtype)
        t = t * (1 - eye) + eye
    try:
        return np.linalg.solve(t, b)
    except np.linalg.LinAlgError:
        pass
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:], b.dtype)
    rows = range(t.shape[-1] - 1, -1, -1) if upper else range(t.shape[-1])
    with np.errstate(all="ignore"):
        for i in rows:  # substitution, one row at a time
            done = np.einsum("...j,...jk->...k", t[..., i, :], x)
            x[..., i, :] = (b[..., i, :] - done) / t[..., i, i, None]
    return x


def qr(a: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    return np.linalg.qr(a, mode=mode)


def eigh(a: np.ndarray, uplo: str) -> tuple[np.ndarray, np.ndarray]:
    return tuple(np.linalg.eigh(a, UPLO=uplo))


def eig(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's eig, always complex: it returns real arrays where every eigenvalue is real."""
    values, vectors = np.linalg.eig(a)
    kind = np.result_type(a.dtype, np.complex64)
    return values.astype(kind, copy=False), vectors.astype(kind, copy=False)


def svd(a: np.ndarray, full_matrices: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(np.linalg.svd(a, full_matrices=full_matrices))


def det(a: np.ndarray) -> np.ndarray:
    return np.linalg.det(a)


def slogdet(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return tuple(np.linalg.slogdet(a))
