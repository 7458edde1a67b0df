"""LAPACK's symmetric-indefinite factorization on the host: Bunch-Kaufman pivoting
(sytf2 / hetf2, lower triangle) and the solve with its factors (sytrs / hetrs), in NumPy,
with LAPACK's layout of ``LD`` and its one-based ``pivots`` (a negative pair marks a
2x2 block), so the results are PyTorch's."""

from __future__ import annotations

import math

import numpy as np

_ALPHA = (1 + math.sqrt(17)) / 8  # Bunch-Kaufman's growth bound


def _size(z: np.ndarray) -> np.ndarray:
    """LAPACK's |.| for pivot search: |re| + |im| (cabs1) for complex numbers."""
    return np.abs(z.real) + np.abs(z.imag) if np.iscomplexobj(z) else np.abs(z)


def ldl_factor_ex(a: np.ndarray, hermitian: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(LD, pivots, info) over a batch of matrices (read from their lower triangles)."""
    n = a.shape[-1]
    flat = np.array(a, copy=True).reshape((math.prod(a.shape[:-2]), n, n))
    pivots = np.zeros((len(flat), n), np.int32)
    info = np.zeros(len(flat), np.int32)
    for b in range(len(flat)):
        info[b] = _factor(flat[b], pivots[b], hermitian and np.iscomplexobj(flat))
    ld = np.tril(flat).reshape(a.shape)
    return ld, pivots.reshape(a.shape[:-1]), info.reshape(a.shape[:-2])


def _factor(A: np.ndarray, ipiv: np.ndarray, herm: bool) -> int:  # noqa: C901, N803
    """One matrix in place; ``ipiv`` filled; returns LAPACK's info."""
    n = len(A)
    cj = np.conj if herm else (lambda z: z)
    diag = (lambda z: z.real) if herm else (lambda z: z)
    info, k = 0, 0
    while k < n:
        step = 1
        absakk = abs(A[k, k].real) if herm else float(_size(A[k, k]))
        if k + 1 < n:
            imax = k + 1 + int(np.argmax(_size(A[k + 1 :, k])))
            colmax = float(_size(A[imax, k]))
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0 or math.isnan(absakk):
            info = info or k + 1
            kp = k
            if herm:
                A[k, k] = A[k, k].real
        else:
            if absakk >= _ALPHA * colmax:
                kp = k
            else:
                rowmax = float(np.max(_size(A[imax, k:imax])))
                if imax + 1 < n:
                    rowmax = max(rowmax, float(np.max(_size(A[imax + 1 :, imax]))))
                big = abs(A[imax, imax].real) if herm else float(_size(A[imax, imax]))
                if absakk >= _ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif big >= _ALPHA * rowmax:
                    kp = imax
                else:
                    kp, step = imax, 2
            kk = k + step - 1
            if kp != kk:  # swap rows and columns kk and kp of the trailing matrix
                A[kp + 1 :, [kk, kp]] = A[kp + 1 :, [kp, kk]]
                between = A[kk + 1 : kp, kk].copy()
                A[kk + 1 : kp, kk] = cj(A[kp, kk + 1 : kp])
                A[kp, kk + 1 : kp] = cj(between)
                if herm:
                    A[kp, kk] = np.conj(A[kp, kk])
                A[kk, kk], A[kp, kp] = diag(A[kp, kp]), diag(A[kk, kk])
                if step == 2:
                    if herm:
                        A[k, k] = A[k, k].real
                    A[[k + 1, kp], k] = A[[kp, k + 1], k]
            elif herm:
                A[k, k] = A[k, k].real
                if step == 2:
                    A[k + 1, k + 1] = A[k + 1, k + 1].real
            if step == 1:
                if k + 1 < n:
                    d11 = 1 / diag(A[k, k])
                    x = A[k + 1 :, k].copy()
                    A[k + 1 :, k + 1 :] -= np.tril(d11 * np.outer(x, cj(x)))
                    A[k + 1 :, k] = d11 * x
                    if herm:
                        idx = np.arange(k + 1, n)
                        A[idx, idx] = A[idx, idx].real
            elif k + 2 < n:
                if herm:
                    d = abs(A[k + 1, k])
                    d11 = A[k + 1, k + 1].real / d
                    d22 = A[k, k].real / d
                    d21 = A[k + 1, k] / d
                    d = 1 / (d11 * d22 - 1) / d
                    wk = d * (d11 * A[k + 2 :, k] - d21 * A[k + 2 :, k + 1])
                    wkp1 = d * (d22 * A[k + 2 :, k + 1] - np.conj(d21) * A[k + 2 :, k])
                else:
                    d21 = A[k + 1, k]
                    d11 = A[k + 1, k + 1] / d21
                    d22 = A[k, k] / d21
                    d21 = 1 / (d11 * d22 - 1) / d21
                    wk = d21 * (d11 * A[k + 2 :, k] - A[k + 2 :, k + 1])
                    wkp1 = d21 * (d22 * A[k + 2 :, k + 1] - A[k + 2 :, k])
                xk, xk1 = A[k + 2 :, k].copy(), A[k + 2 :, k + 1].copy()
                A[k + 2 :, k + 2 :] -= np.tril(np.outer(xk, cj(wk)) + np.outer(xk1, cj(wkp1)))
                A[k + 2 :, k], A[k + 2 :, k + 1] = wk, wkp1
                if herm:
                    idx = np.arange(k + 2, n)
                    A[idx, idx] = A[idx, idx].real
        if step == 1:
            ipiv[k] = kp + 1
        else:
            ipiv[k] = ipiv[k + 1] = -(kp + 1)
        k += step
    return info


def ldl_solve(ld: np.ndarray, pivots: np.ndarray, b: np.ndarray, hermitian: bool) -> np.ndarray:
    """X with A X = B from ``ldl_factor_ex``'s factors, the batches broadcast."""
    batch = np.broadcast_shapes(ld.shape[:-2], pivots.shape[:-1], b.shape[:-2])
    n, k = b.shape[-2:]
    dtype = np.result_type(ld, b)
    count = math.prod(batch)  # (-1 is ambiguous for empty matrices)
    lds = np.broadcast_to(ld, (*batch, n, n)).reshape((count, n, n))
    pivs = np.broadcast_to(pivots, (*batch, n)).reshape((count, n))
    x = np.array(np.broadcast_to(b, (*batch, n, k)), dtype=dtype).reshape((count, n, k))
    herm = hermitian and np.iscomplexobj(ld)
    for i in range(len(x)):
        _solve(lds[i], pivs[i], x[i], herm)
    return x.reshape((*batch, n, k))


def _solve(A: np.ndarray, ipiv: np.ndarray, B: np.ndarray, herm: bool) -> None:  # noqa: N803
    n = len(A)
    cj = np.conj if herm else (lambda z: z)
    k = 0
    while k < n:  # L D Y = P^T B
        if ipiv[k] > 0:
            kp = ipiv[k] - 1
            B[[k, kp]] = B[[kp, k]]
            B[k + 1 :] -= np.outer(A[k + 1 :, k], B[k])
            B[k] /= A[k, k].real if herm else A[k, k]
            k += 1
        else:
            kp = -ipiv[k] - 1
            B[[k + 1, kp]] = B[[kp, k + 1]]
            B[k + 2 :] -= np.outer(A[k + 2 :, k], B[k]) + np.outer(A[k + 2 :, k + 1], B[k + 1])
            akm1k = A[k + 1, k]
            akm1 = A[k, k] / cj(akm1k)
            ak = A[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1, bk = B[k] / cj(akm1k), B[k + 1] / akm1k
            B[k], B[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T X = Y (L^H where Hermitian), undoing the swaps
        if ipiv[k] > 0:
            B[k] -= cj(A[k + 1 :, k]) @ B[k + 1 :]
            kp = ipiv[k] - 1
            B[[k, kp]] = B[[kp, k]]
            k -= 1
        else:
            B[k] -= cj(A[k + 1 :, k]) @ B[k + 1 :]
            B[k - 1] -= cj(A[k + 1 :, k - 1]) @ B[k + 1 :]
            kp = -ipiv[k] - 1
            B[[k, kp]] = B[[kp, k]]
            k -= 2
