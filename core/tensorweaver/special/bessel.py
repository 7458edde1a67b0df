"""torch.special's Bessel functions of integer order: J0, J1, Y0, Y1, the modified I0, I1,
K0, K1 (and K scaled by e**x), and the spherical j0, with PyTorch's values at the edges
(NaN at +-inf for J, I; NaN below 0 for Y, K; -inf and inf at 0).

Host kernels (NumPy, float64), each accurate to a few units of 1e-16 absolute where the
function oscillates and relative where it does not:
- J0, J1 for |x| < 25 by Miller's backward recurrence, normalized by J0 + 2 sum J_2k = 1;
  Y0, Y1 from the same J_k by their Neumann series (Y1's is Y0's derivative);
- J and Y for |x| >= 25 by Hankel's asymptotic expansion, the phase as Cephes takes it
  (x - pi/4, x - 3 pi/4), so the huge arguments agree with PyTorch's to the last bit;
- K0, K1 for x <= 2 by their power series, above by Steed's continued fraction (Temme);
- I0, I1: :mod:`tensorweaver.ops.special_host`'s.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorweaver.ops import special_host
from tensorweaver.special.no_gradient import unary

_EULER = 0.5772156649015329
_SMALL = 25.0  # below: Miller's recurrence; above: Hankel's expansion


def _f64(x: Any) -> np.ndarray:
    return np.array(x, dtype=np.float64)


def _miller(x: np.ndarray) -> tuple:
    """J_k(x) for k = 0 .. top, 0 < x < 25 (elementwise): the downward recurrence
    J_{k-1} = 2k / x J_k - J_{k+1} from a small seed far above x, normalized."""
    top = 2 * int((_SMALL + 40 + 2 * math.sqrt(40 * _SMALL)) / 2)
    values = [np.zeros_like(x)] * (top + 2)
    above, current = np.zeros_like(x), np.full_like(x, 1e-300)
    values[top] = current
    for k in range(top, 0, -1):
        below = 2 * k / x * current - above
        above, current = current, below
        values[k - 1] = current
        # rescale all kept values when they grow large, so nothing overflows
        big = np.abs(current) > 1e250
        if big.any():
            scale = np.where(big, 1e-250, 1.0)
            values = [v * scale for v in values]
            above, current = above * scale, current * scale
    norm = values[0] + 2 * sum(values[2 : top + 1 : 2])
    return [v / norm for v in values[: top + 1]]


def _hankel(nu: int, x: np.ndarray) -> tuple:
    """(P, Q) of Hankel's expansion of J_nu and Y_nu for x >= 25."""
    mu = 4.0 * nu * nu
    p, q = np.ones_like(x), np.zeros_like(x)
    term = np.ones_like(x)
    for k in range(1, 40):
        term = term * (mu - (2 * k - 1) ** 2) / (k * 8 * x)
        if k % 2:
            q = q + (term if k % 4 == 1 else -term)
        else:
            p = p + (-term if k % 4 == 2 else term)
    return p, q


def _j_and_y(nu: int, x: np.ndarray, want_y: bool) -> np.ndarray:
    """J_nu(x) (or Y_nu(x)) for finite x >= 0, nu in (0, 1)."""
    out = np.zeros_like(x)
    tiny = (x > 0) & (x < 1e-5)  # the recurrence's 2k / x would overflow: two terms suffice
    if tiny.any():
        s = x[tiny]
        j0, j1 = 1 - s * s / 4, s / 2 * (1 - s * s / 8)
        if not want_y:
            out[tiny] = (j0, j1)[nu]
        else:
            log_term = np.log(s / 2) + _EULER
            y0 = 2 / math.pi * (log_term * j0 + s * s / 4)
            y1 = -2 / (math.pi * s) + s / math.pi * (log_term - 0.5)
            out[tiny] = (y0, y1)[nu]
    small = (x >= 1e-5) & (x < _SMALL)
    if small.any():
        s = x[small]
        j = _miller(s)
        if not want_y:
            out[small] = j[nu]
        else:
            log_term = np.log(s / 2) + _EULER
            odd_sum = sum((-1) ** (k + 1) * j[2 * k] / k for k in range(1, len(j) // 2))
            y0 = 2 / math.pi * (log_term * j[0] + 2 * odd_sum)
            if nu == 0:
                out[small] = y0
            else:
                tail = sum(
                    (-1) ** m * (2 * m + 1) / (m * (m + 1)) * j[2 * m + 1]
                    for m in range(1, (len(j) - 1) // 2)
                )
                out[small] = 2 / math.pi * (log_term * j[1] - j[0] / s - j[1] - tail)
    large = x >= _SMALL
    if large.any():
        s = x[large]
        p, q = _hankel(nu, s)
        phase = s - (math.pi / 4 if nu == 0 else 3 * math.pi / 4)
        amplitude = np.sqrt(2 / (math.pi * s))
        if want_y:
            out[large] = amplitude * (p * np.sin(phase) + q * np.cos(phase))
        else:
            out[large] = amplitude * (p * np.cos(phase) - q * np.sin(phase))
    return out


def _bessel_j(nu: int) -> Any:
    def host(x: Any) -> np.ndarray:
        x = _f64(x)
        with np.errstate(all="ignore"):
            ax = np.where(np.isfinite(x), np.abs(x), 0.0)
            out = _j_and_y(nu, ax, want_y=False)
            out = np.where(ax == 0, 1.0 if nu == 0 else 0.0, out)
            if nu == 1:
                out = np.where(np.signbit(x), -out, out)  # J1 is odd (-0.0 included)
            return np.where(np.isfinite(x), out, np.nan)  # PyTorch: NaN at +-inf

    return host


def _bessel_y(nu: int) -> Any:
    def host(x: Any) -> np.ndarray:
        x = _f64(x)
        with np.errstate(all="ignore"):
            inside = np.isfinite(x) & (x > 0)
            out = _j_and_y(nu, np.where(inside, x, 1.0), want_y=True)
            out = np.where(inside, out, np.nan)
            return np.where(x == 0, -np.inf, out)

    return host


def _k_series(x: np.ndarray) -> tuple:
    """K0(x), K1(x) for 0 < x <= 2 from their power series (A&S 9.6.13 and 9.6.11)."""
    quarter = x * x / 4
    log_term = np.log(x / 2) + _EULER
    i0, i1 = special_host.i0(x), special_host.i1(x)
    term, harmonic = np.ones_like(x), 0.0
    k0_sum, k1_sum = np.zeros_like(x), np.zeros_like(x)
    # k1: sum (psi(k + 1) + psi(k + 2)) (x^2/4)^k / (k! (k + 1)!), psi(k + 1) = H_k - gamma
    k1_term = np.ones_like(x)
    for k in range(0, 30):
        if k:
            term = term * quarter / (k * k)
            harmonic += 1.0 / k
            k1_term = k1_term * quarter / (k * (k + 1))
            k0_sum = k0_sum + term * harmonic
        psi_sum = 2 * (harmonic - _EULER) + 1.0 / (k + 1)
        k1_sum = k1_sum + psi_sum * k1_term
    k0 = -log_term * i0 + k0_sum
    k1 = 1 / x + np.log(x / 2) * i1 - x / 4 * k1_sum
    return k0, k1


def _k_fraction(x: np.ndarray) -> tuple:
    """e**x K0(x), e**x K1(x) for x > 2 by Steed's continued fraction (Temme's CF2)."""
    b = 2 * (1 + x)
    d = 1 / b
    h = delh = d
    q1, q2 = np.zeros_like(x), np.ones_like(x)
    a1 = 0.25
    q = c = np.full_like(x, a1)
    a = -a1
    s = 1 + q * delh
    done = np.zeros(x.shape, dtype=bool)
    for i in range(1, 500):
        a -= 2 * i
        c = -a * c / (i + 1.0)
        q1, q2 = q2, (q1 - b * q2) / a
        q = q + c * q2
        b = b + 2
        d = 1 / (b + a * d)
        delh = (b * d - 1) * delh
        dels = q * delh
        # converged elements keep their sums (their recurrences may overflow later)
        h, s = np.where(done, h, h + delh), np.where(done, s, s + dels)
        done |= np.abs(dels / s) < 1e-17
        if done.all():
            break
    k0 = np.sqrt(math.pi / (2 * x)) / s
    return k0, k0 * (x + 0.5 - a1 * h) / x


def _bessel_k(nu: int, scaled: bool) -> Any:
    def host(x: Any) -> np.ndarray:
        x = _f64(x)
        out = np.full_like(x, np.nan)
        with np.errstate(all="ignore"):
            small = (x > 0) & (x <= 2)
            if small.any():
                pair = _k_series(x[small])
                out[small] = pair[nu] * (np.exp(x[small]) if scaled else 1.0)
            large = (x > 2) & np.isfinite(x)
            if large.any():
                pair = _k_fraction(x[large])
                out[large] = pair[nu] * (1.0 if scaled else np.exp(-x[large]))
            out = np.where(x == np.inf, 0.0, out)
            return np.where(x == 0, np.inf, out)

    return host


def _modified_i(nu: int) -> Any:
    kernel = special_host.i0 if nu == 0 else special_host.i1

    def host(x: Any) -> np.ndarray:
        x = _f64(x)
        with np.errstate(all="ignore"):
            return np.where(np.isinf(x), np.nan, kernel(x))  # PyTorch: NaN at +-inf

    return host


def _spherical_j0(x: Any) -> np.ndarray:
    x = _f64(x)
    with np.errstate(all="ignore"):
        x2 = x * x
        # sin(x) / x, by its series near 0 (PyTorch's cut at |x| < 0.5)
        series = 1 + x2 * (-1 / 6 + x2 * (1 / 120 + x2 * (-1 / 5040 + x2 * (
            1 / 362880 + x2 * (-1 / 39916800 + x2 / 6227020800)))))  # fmt: skip
        out = np.where(np.abs(x) < 0.5, series, np.sin(x) / x)
        return np.where(np.isinf(x), 0.0, out)


bessel_j0 = unary("bessel_j0", _bessel_j(0))
bessel_j1 = unary("bessel_j1", _bessel_j(1))
bessel_y0 = unary("bessel_y0", _bessel_y(0))
bessel_y1 = unary("bessel_y1", _bessel_y(1))
modified_bessel_i0 = unary("modified_bessel_i0", _modified_i(0))
modified_bessel_i1 = unary("modified_bessel_i1", _modified_i(1))
modified_bessel_k0 = unary("modified_bessel_k0", _bessel_k(0, scaled=False))
modified_bessel_k1 = unary("modified_bessel_k1", _bessel_k(1, scaled=False))
scaled_modified_bessel_k0 = unary("scaled_modified_bessel_k0", _bessel_k(0, scaled=True))
scaled_modified_bessel_k1 = unary("scaled_modified_bessel_k1", _bessel_k(1, scaled=True))
spherical_bessel_j0 = unary("spherical_bessel_j0", _spherical_j0)
