"""Discrete Fourier transforms (API 2.4, tw.fft): the three primitives as torch's own.

The IR's primitives are torch's internal ``_fft_c2c``/``_fft_r2c``/``_fft_c2r``, which
``torch.fft``'s functions call after the same padding and normalization choices the core
makes, so a transform here costs what it costs in torch. torch's CPU (MKL) kernels reject
an empty batch, which the IR allows: that result is made empty directly.
"""

from __future__ import annotations

import torch

Tensor = torch.Tensor

#: The IR's scale -> torch's internal normalization code.
_NORM = {"none": 0, "by_root_n": 1, "by_n": 2}


def _empty(a: Tensor, last: int, last_size: int, dtype: torch.dtype) -> Tensor:
    shape = list(a.shape)
    shape[last] = last_size
    return torch.zeros(shape, dtype=dtype, device=a.device)


class FourierTransforms:
    """Mixed into the backend class; each method is one optional primitive."""

    def fft_c2c(self, a: Tensor, dims: tuple, norm: str, forward: bool) -> Tensor:
        if a.numel() == 0:
            return a.clone()
        return torch._fft_c2c(a, dims, _NORM[norm], forward)

    def fft_r2c(self, a: Tensor, dims: tuple, norm: str, onesided: bool) -> Tensor:
        if a.numel() == 0:
            n = a.shape[dims[-1]]
            return _empty(a, dims[-1], n // 2 + 1 if onesided else n, a.dtype.to_complex())
        return torch._fft_r2c(a, dims, _NORM[norm], onesided)

    def fft_c2r(self, a: Tensor, dims: tuple, norm: str, last_dim_size: int) -> Tensor:
        if a.numel() == 0:
            return _empty(a, dims[-1], last_dim_size, a.dtype.to_real())
        return torch._fft_c2r(a, dims, _NORM[norm], last_dim_size)
