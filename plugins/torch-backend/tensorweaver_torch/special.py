"""The optional elementwise and special functions (acos, lgamma, erfinv, ...) primitives of the
backend API 2.3 (see ``OPTIONAL`` in ``tensorweaver.contract.ir``), as this backend's library
computes them: every one has a torch kernel."""

from __future__ import annotations

import torch
from torch import Tensor


def _kernel(fn: object) -> object:
    def method(self: object, *arrays: Tensor) -> Tensor:
        return fn(*arrays)

    method.__name__ = method.__qualname__ = getattr(fn, "__name__", "kernel")
    return method


class SpecialFunctions:
    """Mixed into the backend class; each method is one optional primitive."""

    acos = _kernel(torch.acos)
    asin = _kernel(torch.asin)
    atan = _kernel(torch.atan)
    sinh = _kernel(torch.sinh)
    cosh = _kernel(torch.cosh)
    asinh = _kernel(torch.asinh)
    acosh = _kernel(torch.acosh)
    atanh = _kernel(torch.atanh)
    atan2 = _kernel(torch.atan2)
    lgamma = _kernel(torch.lgamma)
    digamma = _kernel(torch.special.digamma)
    erfinv = _kernel(torch.special.erfinv)
    erfc = _kernel(torch.special.erfc)
    erfcx = _kernel(torch.special.erfcx)
    i0 = _kernel(torch.special.i0)
    i0e = _kernel(torch.special.i0e)
    i1 = _kernel(torch.special.i1)
    i1e = _kernel(torch.special.i1e)
    ndtri = _kernel(torch.special.ndtri)
    sigmoid = _kernel(torch.sigmoid)
    log_ndtr = _kernel(torch.special.log_ndtr)
    zeta = _kernel(torch.special.zeta)
    # torch.special's Airy function and Bessel functions of integer order
    airy_ai = _kernel(torch.special.airy_ai)
    bessel_j0 = _kernel(torch.special.bessel_j0)
    bessel_j1 = _kernel(torch.special.bessel_j1)
    bessel_y0 = _kernel(torch.special.bessel_y0)
    bessel_y1 = _kernel(torch.special.bessel_y1)
    modified_bessel_i0 = _kernel(torch.special.modified_bessel_i0)
    modified_bessel_i1 = _kernel(torch.special.modified_bessel_i1)
    modified_bessel_k0 = _kernel(torch.special.modified_bessel_k0)
    modified_bessel_k1 = _kernel(torch.special.modified_bessel_k1)
    scaled_modified_bessel_k0 = _kernel(torch.special.scaled_modified_bessel_k0)
    scaled_modified_bessel_k1 = _kernel(torch.special.scaled_modified_bessel_k1)
    spherical_bessel_j0 = _kernel(torch.special.spherical_bessel_j0)
    # torch.special's orthogonal polynomials, (x, n) of one shape
    chebyshev_polynomial_t = _kernel(torch.special.chebyshev_polynomial_t)
    chebyshev_polynomial_u = _kernel(torch.special.chebyshev_polynomial_u)
    chebyshev_polynomial_v = _kernel(torch.special.chebyshev_polynomial_v)
    chebyshev_polynomial_w = _kernel(torch.special.chebyshev_polynomial_w)
    hermite_polynomial_h = _kernel(torch.special.hermite_polynomial_h)
    hermite_polynomial_he = _kernel(torch.special.hermite_polynomial_he)
    laguerre_polynomial_l = _kernel(torch.special.laguerre_polynomial_l)
    legendre_polynomial_p = _kernel(torch.special.legendre_polynomial_p)
    shifted_chebyshev_polynomial_t = _kernel(torch.special.shifted_chebyshev_polynomial_t)
    shifted_chebyshev_polynomial_u = _kernel(torch.special.shifted_chebyshev_polynomial_u)
    shifted_chebyshev_polynomial_v = _kernel(torch.special.shifted_chebyshev_polynomial_v)
    shifted_chebyshev_polynomial_w = _kernel(torch.special.shifted_chebyshev_polynomial_w)

    def polygamma(self, n: int, a: Tensor) -> Tensor:
        return torch.special.polygamma(n, a)
