"""The error function to full float64 precision with NumPy alone (no SciPy).

* ``|x| < 1``: ``erf(x) = x * P(x**2)`` with ``P`` the Maclaurin series
  ``2/sqrt(pi) * sum((-t)**n / (n! * (2n + 1)))``; 19 terms reach 1e-17 for ``t <= 1``,
  where the alternating sum loses under one ulp.
* ``1 <= |x| < 6``: ``erf(x) = 1 - exp(-x**2) * Q(x)``, where ``Q(x) = erfc(x) * exp(x**2)``
  is smooth and slowly varying. ``Q`` is a Chebyshev fit made from ``math.erfc`` on first
  use (a few ms, mostly importing numpy.polynomial); its few-ulp error is damped by
  ``erfc(x) / erf(x) <= 0.19``.
* ``|x| >= 6``: ``erfc(x) < 2.2e-17``, so ``erf(x)`` rounds to ``+-1``; ``Q`` is evaluated at 6.

Measured against mpmath over [-7, 7] and tiny arguments: at most 3 ulp, 0.1 ulp on average.
Arrays of up to ``_SMALL`` elements use ``math.erf`` per element instead: the ~110
whole-array steps above cost a fixed ~60 us, more than the loop below ~1500 elements.
"""

from __future__ import annotations

import functools
import math

import numpy as np

_SPLIT = 1.0
_TOP = 6.0
_SMALL = 1024

# Maclaurin coefficients of erf(x)/x in t = x*x, lowest first.
_SERIES = np.array(
    [(-1) ** n * 2 / math.sqrt(math.pi) / (math.factorial(n) * (2 * n + 1)) for n in range(19)]
)

_MID = (_SPLIT + _TOP) / 2
_HALF = (_TOP - _SPLIT) / 2


@functools.cache
def _q_coefficients(degree: int = 36) -> np.ndarray:
    """Power-basis coefficients, in s = (x - _MID) / _HALF, of a Chebyshev fit of Q on [1, 6]."""
    from numpy.polynomial import chebyshev

    x = _MID + _HALF * chebyshev.chebpts1(2 * (degree + 1))
    # Nodes on a 2**-20 grid make x*x exact, so exp(x*x) is good to an ulp at every node.
    x = np.round(x * 2.0**20) / 2.0**20
    q = np.array([math.erfc(v) * math.exp(v * v) for v in x.tolist()])
    return chebyshev.cheb2poly(chebyshev.chebfit((x - _MID) / _HALF, q, degree))


def _horner(z: np.ndarray, coef: np.ndarray) -> np.ndarray:
    r = np.full_like(z, coef[-1])
    for c in coef[-2::-1]:
        r *= z
        r += c
    return r


def erf(x: np.ndarray) -> np.ndarray:
    """erf of a float64 array (NaN stays NaN, erf(+-inf) = +-1)."""
    if x.size <= _SMALL:
        return np.array([math.erf(v) for v in x.ravel().tolist()]).reshape(x.shape)
    ax = np.abs(x)
    out = np.empty(x.shape)
    inner = ax < _SPLIT
    xi = x[inner]
    out[inner] = xi * _horner(xi * xi, _SERIES)
    outer = ~inner  # NaN lands here and propagates through copysign
    if outer.any():
        xo = np.minimum(ax[outer], _TOP)
        q = _horner((xo - _MID) / _HALF, _q_coefficients())
        out[outer] = np.copysign(1.0 - np.exp(-xo * xo) * q, x[outer])
    return out
