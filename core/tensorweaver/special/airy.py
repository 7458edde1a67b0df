"""torch.special's Airy function Ai (``airy_ai``), with no gradient (as PyTorch's).

Host kernel (NumPy, float64): within 2e-14 relative of SciPy's (Cephes's) for |x| < 9 away
from Ai's zeros, 1e-14 absolute everywhere (PyTorch's loses up to 5e-4 between -9 and -2.09):
- |x| >= 9 (zeta = 2/3 |x|**1.5 >= 18): the asymptotic expansions in 1/zeta, exponential
  above 0 and oscillating below, the phase computed as PyTorch's kernel computes it, so huge
  negative arguments agree to the last bit; 0 above 103.892, where PyTorch's kernel stops
  (NaN at +-inf, as there);
- |x| < 9: a Taylor series of Ai's equation y'' = x y about the nearest of a grid of points
  0.5 apart, whose Ai and Ai' are found once by stepping that series: from 0 towards -9
  (the oscillating side, where errors do not grow) and from 9 (the expansion's values) down
  to 0, the direction in which the decaying Ai is the growing solution.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorweaver.special.no_gradient import unary

_EDGE = 9.0  # below: the Taylor series about the grid; above: the expansions
_TOP = 103.892  # PyTorch's kernel gives 0 above
_STEP = 0.5
_TERMS = 40  # of a Taylor step of at most 0.5: the last is below 1e-40 of the first
_AI0 = 0.355028053887817239260  # Ai(0) = 3**(-2/3) / Gamma(2/3)
_DAI0 = -0.258819403792806798405  # Ai'(0) = -3**(-1/3) / Gamma(1/3)


def _expansion_terms(count: int) -> tuple:
    """The coefficients u_k of Ai's asymptotic expansion and v_k of Ai''s (DLMF 9.7.2)."""
    u, v = [1.0], [1.0]
    for k in range(1, count):
        u.append(u[-1] * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216 * k))
        v.append(-u[-1] * (6 * k + 1) / (6 * k - 1))
    return np.array(u), np.array(v)


_U, _V = _expansion_terms(30)


def _series(coefficients: np.ndarray, inverse_zeta: np.ndarray, sign: float) -> np.ndarray:
    """sum_k sign**k c_k / zeta**k, by Horner's rule."""
    total = np.zeros_like(inverse_zeta)
    for c in coefficients[::-1]:
        total = total * (sign * inverse_zeta) + c
    return total


def _above(x: np.ndarray, derivative: bool = False) -> np.ndarray:
    """Ai(x) (or Ai'(x)) for x >= 9: e**-zeta / (2 sqrt(pi) x**(1/4)) sum (-1)**k u_k / zeta**k."""
    zeta = 2.0 * x * np.sqrt(x) / 3.0
    scale = np.exp(-zeta) / (2.0 * math.sqrt(math.pi))
    if derivative:
        return -scale * np.sqrt(np.sqrt(x)) * _series(_V, 1.0 / zeta, -1.0)
    return scale / np.sqrt(np.sqrt(x)) * _series(_U, 1.0 / zeta, -1.0)


def _below(x: np.ndarray) -> np.ndarray:
    """Ai(x) for x <= -9: (sin(theta) P - cos(theta) Q) / (sqrt(pi) |x|**(1/4)), theta =
    zeta + pi/4, P and Q the even and odd terms of the expansion with alternating signs."""
    t = np.sqrt(-x)
    zeta = -2.0 * x * t / 3.0
    theta = zeta + 0.25 * math.pi
    w = 1.0 / (zeta * zeta)
    p = _series(_U[0::2], w, -1.0)
    q = _series(_U[1::2], w, -1.0) / zeta
    return (np.sin(theta) * p - np.cos(theta) * q) / (math.sqrt(math.pi) * np.sqrt(t))


def _taylor(x0: Any, y: Any, dy: Any, h: Any) -> tuple:
    """(Ai, Ai') at x0 + h from their values at x0, by the series of y'' = x y."""
    a = [y, dy, x0 * y / 2.0]
    for k in range(1, _TERMS - 2):
        a.append((x0 * a[k] + a[k - 1]) / ((k + 2) * (k + 1)))
    value = slope = 0.0 * h
    for k in range(_TERMS - 1, 0, -1):
        value = value * h + a[k]
        slope = slope * h + k * a[k]
    return value * h + a[0], slope


def _grid() -> tuple:
    """Points -9, -8.5, ..., 9 and Ai, Ai' there."""
    count = int(_EDGE / _STEP)
    below, above = [(_AI0, _DAI0)], [(_above(np.float64(_EDGE)), _above(np.float64(_EDGE), True))]
    for i in range(count):
        below.append(_taylor(-i * _STEP, *below[-1], -_STEP))
        above.append(_taylor(_EDGE - i * _STEP, *above[-1], -_STEP))
    pairs = below[:0:-1] + [below[0]] + above[-2::-1]  # the positive side from 9 but for 0
    points = np.arange(-count, count + 1) * _STEP
    return points, np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


_POINTS, _VALUES, _SLOPES = _grid()


def _near(x: np.ndarray) -> np.ndarray:
    """Ai(x) for |x| < 9 from the nearest grid point."""
    i = np.rint((x - _POINTS[0]) / _STEP).astype(np.int64)
    return _taylor(_POINTS[i], _VALUES[i], _SLOPES[i], x - _POINTS[i])[0]


def _airy_ai(x: Any) -> np.ndarray:
    x = np.array(x, dtype=np.float64)
    out = np.full_like(x, np.nan)
    with np.errstate(all="ignore"):
        for where, fn in (
            ((x >= _EDGE) & (x <= _TOP), _above),
            (x <= -_EDGE, _below),
            (np.abs(x) < _EDGE, _near),
        ):
            if where.any():
                out[where] = fn(x[where])
    out[(x > _TOP) & (x < np.inf)] = 0.0  # NaN at +-inf, as PyTorch's
    return out


airy_ai = unary("airy_ai", _airy_ai)
