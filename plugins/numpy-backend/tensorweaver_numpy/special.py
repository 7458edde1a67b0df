"""The optional elementwise and special functions (acos, lgamma, erfinv, ...) primitives of the
backend API 2.3 (see ``OPTIONAL`` in ``tensorweaver.contract.ir``), as this backend's library
computes them.

Only the ones NumPy has a kernel for are here (``numpy.i0`` is Cephes's, as PyTorch's). The
others (lgamma, digamma, erfinv, zeta, i0e, i1, ...) the core computes with NumPy on the host
(its ``tensorweaver.ops.special_host``): for this backend's arrays that is no copy and no
warning, and the numerical code lives in one place.
"""

from __future__ import annotations

import numpy as np

from tensorweaver_numpy._quiet import quiet, quiet_ufunc
from tensorweaver_numpy.layouts import unary_layout


class SpecialFunctions:
    """Mixed into the backend class; each method is one optional primitive."""

    acos = quiet_ufunc(np.arccos)
    asin = quiet_ufunc(np.arcsin)
    atan = quiet_ufunc(np.arctan)
    sinh = quiet_ufunc(np.sinh)
    cosh = quiet_ufunc(np.cosh)
    asinh = quiet_ufunc(np.arcsinh)
    acosh = quiet_ufunc(np.arccosh)
    atanh = quiet_ufunc(np.arctanh)
    atan2 = quiet_ufunc(np.arctan2)

    @quiet
    def sigmoid(self, a: np.ndarray) -> np.ndarray:
        if a.dtype == np.float16:  # in float32, rounded once, as PyTorch's CPU kernel
            out = self.sigmoid(a.astype(np.float32)).astype(np.float16)
        else:
            # e^-|a| keeps both tails accurate relative to the value; one ufunc pass each.
            e = np.exp(-np.abs(a))
            positive = 1 / (1 + e)
            out = np.where(a >= 0, positive, e * positive)
        if a.ndim > 1 and not a.flags.c_contiguous:
            return unary_layout(out, a)  # (order="K" gives a size-1 axis a stride of its own)
        return out

    @quiet
    def i0(self, a: np.ndarray) -> np.ndarray:
        # numpy.i0 is not a ufunc: it keeps float32 in float32; float64 holds every result.
        return np.i0(np.asarray(a, dtype=np.float64)).astype(a.dtype, copy=False)
