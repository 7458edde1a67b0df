"""Gradient rules of the optional special primitives (API 2.3), merged into
:data:`tensorweaver.autograd.gradients.GRADIENTS` and written by that module's conventions
(a rule takes the node and its output's gradient, returns one gradient per input)."""

from __future__ import annotations

import math
from typing import Any, Callable

from tensorweaver.dtype_info import finfo
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import special as sf
from tensorweaver.ops.complex import conj_physical
from tensorweaver.tensor import Tensor

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_RSQRT_2PI = 1 / math.sqrt(2 * math.pi)


def _x(node: Any) -> Tensor:
    return node.inputs[0]


def _y(node: Any) -> Tensor:
    """The primitive's output, saved by the forward."""
    return node.output(node.saved)


def _over(g: Tensor, derivative_denominator: Tensor) -> Tensor:
    """``g`` times the conjugate of ``1 / derivative_denominator`` (PyTorch's convention for
    complex input; the denominator itself for real input)."""
    if derivative_denominator.dtype.is_complex:
        derivative_denominator = conj_physical(derivative_denominator)
    return ew.div(g, derivative_denominator)


def _over_sqrt(g: Tensor, radicand: Tensor) -> Tensor:
    return _over(g, ew.sqrt(radicand))


def _acos(node: Any, g: Tensor) -> tuple:
    x = _x(node)
    return (ew.neg(_over_sqrt(g, ew.sub(1, ew.mul(x, x)))),)


def _asin(node: Any, g: Tensor) -> tuple:
    x = _x(node)
    return (_over_sqrt(g, ew.sub(1, ew.mul(x, x))),)


def _atan(node: Any, g: Tensor) -> tuple:
    x = _x(node)
    return (_over(g, ew.add(ew.mul(x, x), 1)),)


def _sinh(node: Any, g: Tensor) -> tuple:
    return (ew.mul(g, sf.cosh(_x(node))),)


def _cosh(node: Any, g: Tensor) -> tuple:
    return (ew.mul(g, sf.sinh(_x(node))),)


def _asinh(node: Any, g: Tensor) -> tuple:
    x = _x(node)
    return (_over_sqrt(g, ew.add(ew.mul(x, x), 1)),)


def _acosh(node: Any, g: Tensor) -> tuple:
    x = _x(node)
    if x.dtype.is_complex:  # sqrt(z - 1) sqrt(z + 1): sqrt(z**2 - 1) is on another branch
        return (_over(g, ew.mul(ew.sqrt(ew.sub(x, 1)), ew.sqrt(ew.add(x, 1)))),)
    # (x - 1)(x + 1): no cancellation near 1, unlike x**2 - 1
    return (_over_sqrt(g, ew.mul(ew.sub(x, 1), ew.add(x, 1))),)


def _atanh(node: Any, g: Tensor) -> tuple:
    x = _x(node)
    return (_over(g, ew.sub(1, ew.mul(x, x))),)


def _atan2(node: Any, g: Tensor) -> tuple:
    a, b = node.inputs
    recip = ew.reciprocal(ew.add(ew.mul(a, a), ew.mul(b, b)))
    # As PyTorch: 0 where a*a + b*b is 0 (the origin, or underflow) rather than 0 * inf = NaN.
    recip = ew.where(ew.isinf(recip), 0.0, recip)
    ga = ew.mul(ew.mul(g, b), recip) if node.parents[0] is not None else None
    gb = ew.mul(ew.mul(g, ew.neg(a)), recip) if node.parents[1] is not None else None
    return ga, gb


def _exp2(node: Any, g: Tensor) -> tuple:
    """From the result the node kept (ops/special.py exp2: a write through ``.data`` reaches
    it), as PyTorch's Exp2Backward0 reads its saved result."""
    return (sf.exp2_gradient(g, _y(node)),)


def _lgamma(node: Any, g: Tensor) -> tuple:
    return (ew.mul(g, sf.digamma(_x(node))),)


def _digamma(node: Any, g: Tensor) -> tuple:
    return (ew.mul(g, sf.polygamma(1, _x(node))),)


def _polygamma(node: Any, g: Tensor) -> tuple:
    return (ew.mul(g, sf.polygamma(node.saved + 1, _x(node))),)


def _erfinv(node: Any, g: Tensor) -> tuple:
    y = _y(node)
    return (ew.mul(g, ew.mul(ew.exp(ew.mul(y, y)), math.sqrt(math.pi) / 2)),)


def _erfc(node: Any, g: Tensor) -> tuple:
    x = _x(node)
    return (ew.mul(g, ew.mul(ew.exp(ew.neg(ew.mul(x, x))), -_TWO_OVER_SQRT_PI)),)


#: erfcx'(x) = 2 x erfcx(x) - 2 / sqrt(pi) cancels to eps * 2 x**2 relative (all of float32's
#: digits at x = 1e3: log_ndtr's second derivative far below 0 was -1056, not -1, at -1e5),
#: and its derivative to eps * x**4: above 10 (5 below float64) its asymptotic series
#: 2 / sqrt(pi) sum_k>=1 (-1)**k (2k - 1)!! / (2 x**2)**k, whose 15 terms leave 4e-17
#: relative at 10 (1e-8 at 5).
_ERFCX_FAR = {"float64": 10.0}
_ERFCX_SLOPE_TERMS = [(-1) ** k * math.prod(range(1, 2 * k, 2)) for k in range(1, 16)]


def _erfcx(node: Any, g: Tensor) -> tuple:
    x, y = _x(node), _y(node)
    edge = _ERFCX_FAR.get(x.dtype.name, 5.0)
    far = ew.gt(x, edge)
    u = ew.reciprocal(ew.mul(ew.square(ew.where(far, x, edge)), 2))  # only far x: no inf
    series = ew.mul(u, _ERFCX_SLOPE_TERMS[-1])
    for c in _ERFCX_SLOPE_TERMS[-2::-1]:
        series = ew.mul(u, ew.add(series, c))
    near = ew.sub(ew.mul(ew.mul(x, y), 2), _TWO_OVER_SQRT_PI)
    return (ew.mul(g, ew.where(far, ew.mul(series, _TWO_OVER_SQRT_PI), near)),)


def _i0(node: Any, g: Tensor) -> tuple:
    return (ew.mul(g, sf.i1(_x(node))),)


def _i0e(node: Any, g: Tensor) -> tuple:
    x = _x(node)
    return (ew.mul(g, ew.sub(sf.i1e(x), ew.mul(ew.sign(x), _y(node)))),)


def _tiny(x: Tensor) -> tuple:
    """(not |x| > eps of x's dtype, x with those entries set to eps): PyTorch's i1 and i1e
    gradients are the limit 1/2 there (NaN included), a constant (so their second derivative
    is 0 and a subnormal x never divides by x**2 = 0)."""
    eps = finfo(x.dtype).eps
    tiny = ew.logical_not(ew.gt(ew.abs(x), eps))
    return tiny, ew.where(tiny, eps, x)


def _i1_series(x: Tensor) -> tuple:
    """(|x| < 0.02, x there and 0 elsewhere, i1'(x) there by its Taylor series 1/2 +
    3 x**2 / 16 + ...): the second derivative of i0(x) - i1(x) / x cancels terms of size
    1 / x (relative error eps / x**2, 1e-5 at x = 1e-5, as PyTorch's). Only the near entries
    reach the series: where() passes the others a zero gradient, which an inf makes NaN."""
    near = ew.lt(ew.abs(x), 0.02)
    x = ew.where(near, x, 0.0)
    x2 = ew.mul(x, x)
    series = ew.add(
        ew.mul(x2, ew.add(ew.mul(x2, ew.add(ew.mul(x2, 7 / 18432), 5 / 384)), 3 / 16)), 0.5
    )
    return near, x, series


def _i1(node: Any, g: Tensor) -> tuple:
    tiny, safe = _tiny(_x(node))
    near, _, series = _i1_series(safe)
    slope = ew.where(near, series, ew.sub(sf.i0(safe), ew.div(_y(node), safe)))
    return (ew.mul(g, ew.where(tiny, 0.5, slope)),)


def _i1e(node: Any, g: Tensor) -> tuple:
    tiny, safe = _tiny(_x(node))
    y, sign = _y(node), ew.sign(safe)
    near, inner, series = _i1_series(safe)
    # i1e'(x) = exp(-|x|) (i1'(x) - sign(x) i1(x)), with i1' as i1's rule has it
    scaled = ew.mul(ew.exp(ew.neg(ew.abs(inner))), ew.sub(series, ew.mul(sign, sf.i1(inner))))
    slope = ew.sub(sf.i0e(safe), ew.mul(y, ew.add(sign, ew.reciprocal(safe))))
    return (ew.mul(g, ew.where(tiny, 0.5, ew.where(near, scaled, slope))),)


def _ndtri(node: Any, g: Tensor) -> tuple:
    y = _y(node)
    return (ew.mul(g, ew.mul(ew.exp(ew.mul(ew.mul(y, y), 0.5)), math.sqrt(2 * math.pi))),)


def _log_ndtr(node: Any, g: Tensor) -> tuple:
    # d/dx log(ndtr(x)) = pdf(x) / ndtr(x): below 0 as sqrt(2 / pi) / erfcx(-x / sqrt(2))
    # (no 0 / 0 in the lower tail), from 0 up as exp(-x**2 / 2 - log_ndtr(x)) / sqrt(2 pi)
    # (erfcx(-x / sqrt(2)) overflows past x = 38, and its derivative made the second
    # derivative NaN). Each branch sees only its own half: where() passes a zero gradient
    # to the other, which an inf there would make NaN.
    x, y = _x(node), _y(node)
    lower = ew.lt(x, 0)
    below = ew.where(lower, x, 0.0)
    above, log_cdf = ew.where(lower, 0.0, x), ew.where(lower, 0.0, y)
    left = ew.div(math.sqrt(2 / math.pi), sf.erfcx(ew.mul(below, -1 / math.sqrt(2.0))))
    right = ew.mul(ew.exp(ew.neg(ew.add(ew.mul(ew.mul(above, above), 0.5), log_cdf))), _RSQRT_2PI)
    return (ew.mul(g, ew.where(lower, left, right)),)


def _zeta(node: Any, g: Tensor) -> tuple:
    if node.parents[0] is not None:
        raise NotImplementedError(
            "zeta: the derivative with respect to x (the first argument) is not implemented; "
            "detach x, or differentiate with respect to q only"
        )
    x, q = node.inputs
    return None, ew.mul(g, ew.mul(ew.neg(x), sf.zeta(ew.add(x, 1), q)))


SPECIAL_GRADIENTS: dict[str, Callable[[Any, Tensor], tuple]] = {
    "acos": _acos,
    "asin": _asin,
    "atan": _atan,
    "sinh": _sinh,
    "cosh": _cosh,
    "asinh": _asinh,
    "acosh": _acosh,
    "atanh": _atanh,
    "atan2": _atan2,
    "exp2": _exp2,
    "lgamma": _lgamma,
    "digamma": _digamma,
    "polygamma": _polygamma,
    "erfinv": _erfinv,
    "erfc": _erfc,
    "erfcx": _erfcx,
    "i0": _i0,
    "i0e": _i0e,
    "i1": _i1,
    "i1e": _i1e,
    "ndtri": _ndtri,
    "log_ndtr": _log_ndtr,
    "zeta": _zeta,
}
