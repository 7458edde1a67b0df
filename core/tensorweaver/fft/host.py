"""The host (NumPy) computation of each fft primitive, for backends without a kernel.

Each function takes and returns NumPy arrays with the primitive's signature (the ``fft_*``
rows of ``OPTIONAL`` in :mod:`tensorweaver.contract.ir`) and keeps the input's precision.
``norm`` is the IR's absolute scale; numpy.fft's ``norm=`` names the scaled direction.
"""

from __future__ import annotations

import numpy as np

from tensorweaver.contract.fft import numpy_norm as _norm


def _single(a: np.ndarray) -> bool:
    return a.dtype in (np.float32, np.complex64)


def c2c(a: np.ndarray, dims: tuple, norm: str, forward: bool) -> np.ndarray:
    transform = np.fft.fftn if forward else np.fft.ifftn
    return transform(a, axes=dims, norm=_norm(norm, forward)).astype(a.dtype, copy=False)


def r2c(a: np.ndarray, dims: tuple, norm: str, onesided: bool) -> np.ndarray:
    transform = np.fft.rfftn if onesided else np.fft.fftn
    out = transform(a, axes=dims, norm=_norm(norm, True))
    return out.astype(np.complex64 if _single(a) else np.complex128, copy=False)


def c2r(a: np.ndarray, dims: tuple, norm: str, last_dim_size: int) -> np.ndarray:
    sizes = [a.shape[d] for d in dims[:-1]] + [last_dim_size]
    out = np.fft.irfftn(a, s=sizes, axes=dims, norm=_norm(norm, False))
    return out.astype(np.float32 if _single(a) else np.float64, copy=False)
