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

    def polygamma(self, n: int, a: Tensor) -> Tensor:
        return torch.special.polygamma(n, a)
