"""Discrete Fourier transforms (API 2.4, tw.fft): the three primitives on numpy.fft.

``norm`` is the IR's absolute scale ("none", "by_root_n", "by_n"); numpy.fft's ``norm=``
names which direction is scaled (``tensorweaver.contract.fft`` translates). numpy.fft keeps
complex64 and float32 since NumPy 2.0; the casts only guard older releases.
"""

from __future__ import annotations

import numpy as np
from tensorweaver.contract.fft import numpy_norm

A = np.ndarray


def _complex_of(a: A) -> np.dtype:
    return np.dtype(np.complex64 if a.dtype in (np.float32, np.complex64) else np.complex128)


class FourierTransforms:
    """Mixed into the backend class; each method is one optional primitive."""

    def fft_c2c(self, a: A, dims: tuple, norm: str, forward: bool) -> A:
        transform = np.fft.fftn if forward else np.fft.ifftn
        out = transform(a, axes=dims, norm=numpy_norm(norm, forward))
        return out.astype(a.dtype, copy=False)

    def fft_r2c(self, a: A, dims: tuple, norm: str, onesided: bool) -> A:
        transform = np.fft.rfftn if onesided else np.fft.fftn
        out = transform(a, axes=dims, norm=numpy_norm(norm, True))
        return out.astype(_complex_of(a), copy=False)

    def fft_c2r(self, a: A, dims: tuple, norm: str, last_dim_size: int) -> A:
        sizes = [a.shape[d] for d in dims[:-1]] + [last_dim_size]
        out = np.fft.irfftn(a, s=sizes, axes=dims, norm=numpy_norm(norm, False))
        return out.astype(a.real.dtype, copy=False)
