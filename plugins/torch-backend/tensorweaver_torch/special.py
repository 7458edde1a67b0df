"""The optional elementwise and special functions (acos, lgamma, erfinv, ...) primitives of the
backend API 2.3 (see ``OPTIONAL`` in ``tensorweaver.contract.ir``), as this backend's library
computes them: every one has a torch kernel."""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor


def _kernel(fn: object) -> object:
    def method(self: object, *arrays: Tensor) -> Tensor:
        return fn(*arrays)

    method.__name__ = method.__qualname__ = getattr(fn, "__name__", "kernel")
    return method


#: The highest degree torch's polynomial kernels are given where they loop: their
#: recurrence runs n steps per element (about 11 ns each on a CPU core), so torch 2.13's
#: legendre_polynomial_p(0.5, 2**40) would run for hours with no way to stop it. 2**28 steps
#: take about 3 s.
MAX_LOOPED_DEGREE = 2**28


def _degree_bounded(fn: Any, loops: Callable[[Tensor], Tensor]) -> object:
    """``fn(x, n)``, refused with a ValueError where an element's kernel would loop more than
    :data:`MAX_LOOPED_DEGREE` times; ``loops(x)`` marks the x for which torch's kernel runs
    its loop (elsewhere it answers at once, whatever n)."""
    name = fn.__name__.removeprefix("special_")

    def method(self: object, x: Tensor, n: Tensor) -> Tensor:
        from tensorweaver_torch.backend import _tracing  # (backend.py imports this module)

        # (one reduction when no degree is that high; a value read back would stop a tracer)
        if n.numel() == 0 or _tracing() or bool(n.max() <= MAX_LOOPED_DEGREE):
            return fn(x, n)
        x, n = torch.broadcast_tensors(x, n)
        # (a degree of 2**63 or more is INT64_MIN in the kernel: 0 at once)
        slow = (n > MAX_LOOPED_DEGREE) & (n < 2.0**63) & loops(x)
        if bool(slow.any()):
            raise ValueError(
                f"{name}: degree n={int(n[slow].max())} at x={float(x[slow].flatten()[0])} is "
                f"above {MAX_LOOPED_DEGREE}: torch's kernel runs a loop of n steps per element "
                "there and would not finish; use a lower degree"
            )
        return fn(x, n)

    method.__name__ = method.__qualname__ = name
    return method


def _shifted_end_rounded(x: Tensor) -> Tensor:
    """Where 2x - 1 rounds to an end of [-1, 1] that x is not the image of: torch's shifted
    Chebyshev kernels miss both their closed form and their ends' values there, and loop."""
    return (torch.abs(x + x - 1) == 1) & (x != 0) & (x != 1)


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
    # (measured on torch 2.13: Laguerre loops unless x is 0 or x < 0 and not tiny, where
    # it answers NaN; Legendre loops inside (-1, 1) only)
    laguerre_polynomial_l = _degree_bounded(
        torch.special.laguerre_polynomial_l, lambda x: torch.isfinite(x) & (x != 0)
    )
    legendre_polynomial_p = _degree_bounded(
        torch.special.legendre_polynomial_p, lambda x: torch.abs(x) < 1
    )
    # (these loop where 2x - 1 rounds to -1 but x is not 0: x = 1e-300, for one)
    shifted_chebyshev_polynomial_t = _degree_bounded(
        torch.special.shifted_chebyshev_polynomial_t, _shifted_end_rounded
    )
    shifted_chebyshev_polynomial_u = _degree_bounded(
        torch.special.shifted_chebyshev_polynomial_u, _shifted_end_rounded
    )
    shifted_chebyshev_polynomial_v = _degree_bounded(
        torch.special.shifted_chebyshev_polynomial_v, _shifted_end_rounded
    )
    shifted_chebyshev_polynomial_w = _degree_bounded(
        torch.special.shifted_chebyshev_polynomial_w, _shifted_end_rounded
    )

    def polygamma(self, n: int, a: Tensor) -> Tensor:
        return torch.special.polygamma(n, a)
