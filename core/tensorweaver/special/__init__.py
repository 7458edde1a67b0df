"""``tw.special``: PyTorch's ``torch.special`` functions, by the same names and keywords.

The functions live with the other elementwise ops (:mod:`tensorweaver.ops.special`,
:mod:`tensorweaver.ops.elementwise`); this module gives them torch.special's names.
"""

from __future__ import annotations

from typing import Any

from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import elementwise as _ew
from tensorweaver.ops import reduce as _rd
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
from tensorweaver.tensor import Tensor

erf = _ew.erf
expit = _ew.sigmoid
expm1 = _ew.expm1
log1p = _ew.log1p
psi = digamma


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001  (torch's name)
    """Round half to even, optionally to ``decimals`` places."""
    return _ew.round(input, decimals=decimals)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """log(sum(exp(input), dim)), stable for any magnitude."""
    return _rd.logsumexp(input, dim, keepdim)


def softmax(input: Tensor, dim: int, *, dtype: DType | None = None) -> Tensor:
    """exp(input) / sum(exp(input), dim)."""
    from tensorweaver.nn import functional as F

    return F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype: DType | None = None) -> Tensor:
    """input - logsumexp(input, dim)."""
    from tensorweaver.nn import functional as F

    return F.log_softmax(input, dim, dtype=dtype)


__all__ = [
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammaln",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "sinc",
    "softmax",
    "xlog1py",
    "xlogy",
    "zeta",
]
