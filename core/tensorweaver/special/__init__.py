"""``tw.special``: PyTorch's ``torch.special`` functions, by the same names and keywords.

The functions live with the other elementwise ops (:mod:`tensorweaver.ops.special`,
:mod:`tensorweaver.ops.elementwise`); this module gives them torch.special's names.
"""

from __future__ import annotations

from typing import Any

from tensorweaver.contract.dtypes import SCALAR_TYPE_NAMES as _SCALAR_TYPE_NAMES
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import elementwise as _ew
from tensorweaver.ops import incomplete_gamma as _ig
from tensorweaver.ops import movement as _mv
from tensorweaver.ops import reduce as _rd
from tensorweaver.ops.apply import written_out as _written_out
from tensorweaver.ops.special import (
    digamma,
    entr,
    erfc,
    erfcx,
    erfinv,
    exp2,
    i0,
    i0e,
    i1,
    i1e,
    log_ndtr,
    logit,
    multigammaln,
    ndtr,
    ndtri,
    polygamma,
    sinc,
    xlog1py,
    xlogy,
    zeta,
)
from tensorweaver.ops.special import lgamma as gammaln
from tensorweaver.ops.special import need_int as _need_int
from tensorweaver.special.airy import airy_ai
from tensorweaver.special.bessel import (
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
)
from tensorweaver.special.polynomials import (
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)
from tensorweaver.tensor import Tensor

erf = _ew.erf
expit = _ew.sigmoid
expm1 = _ew.expm1
log1p = _ew.log1p
psi = digamma


def round(  # noqa: A001  (torch's name)
    input: Tensor, *, decimals: int = 0, out: Tensor | None = None
) -> Tensor:
    """Round half to even, optionally to ``decimals`` places: floats only, as PyTorch's
    kernel with decimals (``tw.round`` without them keeps integers as they are)."""
    if isinstance(input, Tensor) and input.dtype.kind in "biu":
        kernel = "round_cpu" if decimals else "round_vml_cpu"
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{_SCALAR_TYPE_NAMES[input.dtype.name]}' "
            "(special.round takes floating point tensors: convert with .float())"
        )
    return _ew.round(input, decimals=decimals, out=out)


def gammainc(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other) (``tw.igamma``)."""
    result = _ig.igamma(input, other)
    return result if out is None else _written_out("gammainc", result, out, inputs=(input, other))


def gammaincc(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other) (``tw.igammac``)."""
    result = _ig.igammac(input, other)
    return result if out is None else _written_out("gammaincc", result, out, inputs=(input, other))


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """log(sum(exp(input), dim)), stable for any magnitude."""
    return _rd.logsumexp(input, dim, keepdim)


def softmax(
    input: Tensor, dim: int = _mv.REQUIRED, *, dtype: DType | None = None, **aliases: Any
) -> Tensor:
    """exp(input) / sum(exp(input), dim) (``dim`` required: no implicit choice, as PyTorch's;
    spelled ``axis=`` too, as its parser takes it)."""
    from tensorweaver.nn import functional as F

    if aliases or dim is _mv.REQUIRED:
        dim = _mv.dim_alias("special_softmax", aliases, dim)
    return F.softmax(input, _need_int("special_softmax", "dim", 2, dim), dtype=dtype)


def log_softmax(
    input: Tensor, dim: int = _mv.REQUIRED, *, dtype: DType | None = None, **aliases: Any
) -> Tensor:
    """input - logsumexp(input, dim) (``dim`` required, as for :func:`softmax`)."""
    from tensorweaver.nn import functional as F

    if aliases or dim is _mv.REQUIRED:
        dim = _mv.dim_alias("special_log_softmax", aliases, dim)
    return F.log_softmax(input, _need_int("special_log_softmax", "dim", 2, dim), dtype=dtype)


__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
    "xlog1py",
    "xlogy",
    "zeta",
]
