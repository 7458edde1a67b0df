"""The optional linear algebra (tw.linalg: solve, cholesky, eigh, svd, ..., and tril/triu)
primitives of the backend API 2.3 and 2.4 (see ``OPTIONAL`` in ``tensorweaver.contract.ir``),
as this backend's library computes them.

cuPyNumeric 26.06 has batched ``eigh``, ``eig`` and ``solve_triangular``, and ``svd`` (of tall
matrices) and ``qr`` (reduced) of one matrix: a batch is factored matrix by matrix, a wide
matrix's SVD comes from its transpose's and a complete QR from a reduced one. Its ``cholesky`` and
``solve`` raise on a singular or indefinite matrix without saying which one, and it has no
LU or determinant: those the core computes on the host, where LAPACK reports ``info``.
"""

from __future__ import annotations

import math

import numpy as np

from tensorweaver_cunumeric import legate_config


def _cn() -> object:
    # Imported on call: Legate starts with the backend, after this module is loaded.
    return legate_config.import_library()


class LinearAlgebra:
    """Mixed into the backend class; each method is one optional primitive."""

    def tril(self, a, k):
        return _cn().tril(self._dense(a), k)

    def triu(self, a, k):
        return _cn().triu(self._dense(a), k)

    def _task_operand(self, a):
        """``a`` as cuPyNumeric's tiled linear algebra tasks (``eigh``, ``eig``,
        ``solve_triangular``) can take it. A one-element array may be a Legate future (a
        reduction's result, a 0-d array) seen through reshape's dimension promotions, which
        those tasks cannot tile: Legate raises (``lu_solve`` of a 1x1 system did). A copy has
        no transform left, and costs one element."""
        a = self._dense(a)
        return a.copy() if a.size == 1 else a

    def linalg_eigh(self, a, uplo):
        cn = _cn()
        a = self._task_operand(a)
        if 0 in a.shape:  # cuPyNumeric divides by the batch size
            values = cn.zeros(a.shape[:-1], dtype=a.real.dtype)  # real for complex matrices
            return values, cn.zeros(a.shape, dtype=a.dtype)
        # cuPyNumeric's eigh reads the lower triangle: mirror the upper one there for 'U'
        if uplo == "U":
            a = cn.triu(a) + cn.swapaxes(cn.triu(a, 1), -1, -2)
        values, vectors = cn.linalg.eigh(a)
        return values, vectors

    def linalg_eig(self, a):
        cn = _cn()
        a = self._task_operand(a)
        kind = np.result_type(a.dtype, np.complex64)
        if 0 in a.shape:  # cuPyNumeric divides by the batch size
            return cn.zeros(a.shape[:-1], dtype=kind), cn.zeros(a.shape, dtype=kind)
        values, vectors = cn.linalg.eig(a)
        return values.astype(kind), vectors.astype(kind)

    def linalg_solve_triangular(self, a, b, upper, unitriangular):
        cn = _cn()
        return cn.linalg.solve_triangular(
            self._task_operand(a),
            self._task_operand(b),
            lower=not upper,
            unit_diagonal=unitriangular,
            check_finite=False,  # it would read the arrays back on the host
        )

    def linalg_svd(self, a, full_matrices):
        *batch, m, n = a.shape
        k = min(m, n)
        shapes = ((m, m if full_matrices else k), (k,), (n if full_matrices else k, n))
        # the singular values are real, of a complex matrix too
        real = np.empty(0, a.dtype).real.dtype
        return self._each_matrix(
            a, shapes, lambda cn, x: _svd(cn, x, full_matrices), (a.dtype, real, a.dtype)
        )

    def linalg_qr(self, a, mode):
        *batch, m, n = a.shape
        if mode == "reduced" or m <= n:
            k = min(m, n)
            return self._each_matrix(a, ((m, k), (k, n)), lambda cn, x: cn.linalg.qr(x))
        return self._each_matrix(a, ((m, m), (m, n)), _complete_qr)

    def _each_matrix(self, a, shapes, factor, dtypes=None):
        """``factor`` (an orthogonal factorization: svd, qr) of each matrix of the batch
        ``a``, its outputs (of ``shapes``, and of ``dtypes``, by default ``a``'s) stacked."""
        cn = _cn()
        a = self._dense(a)
        batch = tuple(a.shape[:-2])
        count = math.prod(batch)
        if count == 0 or 0 in a.shape[-2:]:
            # Legion's factorization tasks abort the process on an empty matrix. The square
            # factors of a matrix with no rows or no columns are identities, as torch's.
            dtypes = dtypes or (a.dtype,) * len(shapes)
            return tuple(_empty_factor(cn, batch, s, t) for s, t in zip(shapes, dtypes))
        if not batch:
            return tuple(factor(cn, a))
        flat = a.reshape((count, *a.shape[-2:]))
        parts = [factor(cn, flat[i]) for i in range(count)]
        return tuple(
            cn.stack([p[j] for p in parts]).reshape((*batch, *s)) for j, s in enumerate(shapes)
        )


def _empty_factor(cn, batch, shape, dtype):
    """A factor of ``shape`` for each matrix of ``batch`` when the matrices are empty: an
    identity where it is square, else zeros (it has no elements then, or the batch has none)."""
    if len(shape) == 2 and shape[0] == shape[1] and shape[0] and math.prod(batch):
        return cn.broadcast_to(cn.eye(shape[0], dtype=dtype), (*batch, *shape)).copy()
    return cn.zeros((*batch, *shape), dtype=dtype)


def _complete_qr(cn, x):
    """The complete QR of a tall matrix (cuPyNumeric's qr is reduced only): the reduced QR
    of [x | I] shares x's reflectors, so its Q is x's square Q, and the first columns of
    its R are x's."""
    m, n = x.shape
    q, r = cn.linalg.qr(cn.concatenate([x, cn.eye(m, dtype=x.dtype)], axis=1))
    return q, r[:, :n]


def _svd(cn, x, full_matrices):
    """cuPyNumeric's svd takes m >= n only: a wide matrix's comes from its transpose's."""
    if x.shape[0] >= x.shape[1]:
        return cn.linalg.svd(x, full_matrices=full_matrices)
    u, s, vh = cn.linalg.svd(x.T, full_matrices=full_matrices)
    return vh.T, s, u.T
