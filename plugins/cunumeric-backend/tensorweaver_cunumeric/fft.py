"""Discrete Fourier transforms (API 2.4, tw.fft): the three primitives on cuPyNumeric.

cuPyNumeric 26.06 computes FFTs with cuFFT on GPUs only: on a CPU-only Legate machine
its ``fft`` module raises NotImplementedError. There (and for an empty batch, which
needs no kernel) the transform runs in numpy.fft on the host copy, whose memory is the
CPU's anyway. ``norm`` is the IR's absolute scale ("none", "by_root_n", "by_n");
numpy.fft's ``norm=`` names which direction is scaled (``tensorweaver.contract.fft``).
"""

from __future__ import annotations

import numpy
from tensorweaver.contract import dtypes
from tensorweaver.contract.fft import numpy_norm as _norm

from tensorweaver_cunumeric import legate_config


def _complex_of(dtype) -> numpy.dtype:
    single = dtype in (numpy.float32, numpy.complex64)
    return numpy.dtype(numpy.complex64 if single else numpy.complex128)


def _real_of(dtype) -> numpy.dtype:
    return numpy.dtype(numpy.float32 if dtype == numpy.complex64 else numpy.float64)


class FourierTransforms:
    """Mixed into the backend class; each method is one optional primitive."""

    def _fft_library(self, a):
        """cuPyNumeric's fft module where it has kernels (a GPU, a non-empty array), else
        numpy.fft (the caller then hands it host arrays)."""
        if self.device.kind == "gpu" and a.size:
            return legate_config.import_library().fft
        return None

    def _fft_call(self, a, transform: str, want: numpy.dtype, **kwargs):
        library = self._fft_library(a)
        if library is None:
            out = getattr(numpy.fft, transform)(self.to_host(a), **kwargs)
            return self.from_host(numpy.asarray(out, want), dtypes.BY_NAME[want.name])
        out = getattr(library, transform)(self._dense(a), **kwargs)
        return out if out.dtype == want else out.astype(want)

    def fft_c2c(self, a, dims, norm, forward):
        transform = "fftn" if forward else "ifftn"
        return self._fft_call(
            a, transform, numpy.dtype(a.dtype), axes=dims, norm=_norm(norm, forward)
        )

    def fft_r2c(self, a, dims, norm, onesided):
        want = _complex_of(a.dtype)
        if not onesided:  # a full spectrum: the complex transform of a as complex
            a = a.astype(want)
        transform = "rfftn" if onesided else "fftn"
        return self._fft_call(a, transform, want, axes=dims, norm=_norm(norm, True))

    def fft_c2r(self, a, dims, norm, last_dim_size):
        sizes = [a.shape[d] for d in dims[:-1]] + [last_dim_size]
        want = _real_of(a.dtype)
        shape = list(a.shape)
        for d, size in zip(dims, sizes):
            shape[d] = size
        self._check_fits(shape, want)  # n is the caller's: it can be any size
        return self._fft_call(a, "irfftn", want, s=sizes, axes=dims, norm=_norm(norm, False))
