"""Special functions on the host, with NumPy alone: the optional primitives' host kernels.

Where a backend lacks an optional special primitive (``lgamma``, ``erfinv``, ``zeta``, ...;
see ``OPTIONAL`` in :mod:`tensorweaver.contract.ir`), :func:`~tensorweaver.ops.host_fallback.
run_optional` computes it here on NumPy copies. NumPy has none of the gamma, error or Bessel
kernels (but i0), so this module is also how the NumPy backend computes them: the plugin
defines only the primitives NumPy has (``numpy.arccos``, ...), and the host path, which for
NumPy arrays is already the backend's own memory, says nothing (one copy of this numerical
code, here). The core never depends on SciPy.

Every function takes float arrays and returns float64 (the caller rounds to its dtype).
Methods, each good to a few ulp in float64 (checked against SciPy in the tests):

* the trigonometric and hyperbolic family: NumPy's ufuncs (for backends without them).
* ``lgamma``, ``erfc``: the C library's, through :mod:`math` per element (lgamma near its
  roots at 1 and 2 to a few ulp of 1, not of its tiny value).
* ``digamma``: reflection for x < 0, the recurrence up to x >= 10, then the asymptotic series.
* ``zeta`` (Hurwitz) by Euler-Maclaurin summation; ``polygamma`` from it.
* ``erfcx``: exp(x*x) split exactly into two factors times ``erfc``; the asymptotic series for
  large x. ``erfinv`` and ``ndtri``: Newton (Halley) iterations on ``erf`` near 0 and on
  log(erfc) in the tails, where erfc keeps full relative precision.
* ``i0``, ``i1`` (and the scaled ``i0e``, ``i1e``): the power series below 20, the
  asymptotic series above (its smallest term is below 1e-17 there); the series' rounding
  reaches about 15 ulp near 20.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable

import numpy as np

_SQRT_PI = math.sqrt(math.pi)
_SQRT2 = math.sqrt(2.0)


def _f64(x: Any) -> np.ndarray:
    return np.array(x, dtype=np.float64)


def _per_element(fn: Callable[[float], float]) -> Callable[[Any], np.ndarray]:
    """``fn`` from :mod:`math` over an array; a domain error (a pole) or overflow gives inf."""

    def scalar(v: float) -> float:
        try:
            return fn(v)
        except (ValueError, OverflowError):
            return math.inf

    ufunc = np.frompyfunc(scalar, 1, 1)
    return lambda x: np.asarray(ufunc(_f64(x)), dtype=np.float64)


def _numpy(ufunc: np.ufunc) -> Callable[..., np.ndarray]:
    """A NumPy ufunc on float64 copies, without floating-point warnings."""

    def kernel(*arrays: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            return ufunc(*(_f64(a) for a in arrays))

    return kernel


acos, asin, atan = _numpy(np.arccos), _numpy(np.arcsin), _numpy(np.arctan)
sinh, cosh, atan2 = _numpy(np.sinh), _numpy(np.cosh), _numpy(np.arctan2)
asinh, acosh, atanh = _numpy(np.arcsinh), _numpy(np.arccosh), _numpy(np.arctanh)
lgamma = _per_element(math.lgamma)
erfc = _per_element(math.erfc)
_erf = _per_element(math.erf)


@lru_cache(maxsize=1)
def _bernoulli(count: int = 24) -> tuple:
    """B_0 .. B_count (B_1 = +1/2) as Fractions, exactly, by the Akiyama-Tanigawa algorithm."""
    from fractions import Fraction  # here: it imports decimal, which import tensorweaver skips

    out, row = [], []
    for m in range(count + 1):
        row.append(Fraction(1, m + 1))
        for j in range(m, 0, -1):
            row[j - 1] = j * (row[j - 1] - row[j])
        out.append(row[0])
    return tuple(out)


def digamma(x: Any) -> np.ndarray:
    """psi(x) = d/dx lgamma(x): -inf at +0, +inf at -0, NaN at negative integers and -inf."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        negative = x < 0
        y = np.where(negative, 1 - x, x)
        # psi(x) = psi(1 - x) - pi / tan(pi x); tan has period 1, so reduce x exactly first.
        r = x - np.round(x)
        shift = np.where(negative, -math.pi / np.tan(math.pi * r), 0.0)
        acc = np.zeros_like(y)
        for _ in range(10):
            small = y < 10
            acc = acc - np.where(small, 1 / y, 0.0)
            y = np.where(small, y + 1, y)
        inv2 = 1 / (y * y)
        series = np.zeros_like(y)
        b = _bernoulli()
        for k in range(8, 0, -1):
            series = (series + float(b[2 * k] / (2 * k))) * inv2
        out = np.log(y) - 0.5 / y - series + acc + shift
        out = np.where(negative & (x == np.floor(x)), np.nan, out)
        out = np.where(x == 0, -1 / x, out)
        return np.where(x == np.inf, np.inf, out)


#: How many terms zeta sums directly for a negative q before it gives up (~3e7: seconds of
#: host work; q = -1e15 + 0.5 would take days).
ZETA_TERM_LIMIT = 2**25


def zeta(x: Any, q: Any) -> np.ndarray:
    """The Hurwitz zeta function sum((q + k) ** -x for k >= 0), as Cephes defines it
    (x > 1; a negative q only with an integer x; inf at x == 1 and at q = 0, -1, ...)."""
    x, q = (np.array(a) for a in np.broadcast_arrays(_f64(x), _f64(q)))
    with np.errstate(all="ignore"):
        # Sum the first terms directly until q + n >= 10 (at least 10 of them); only where a
        # value is computed at all (a negative q with an integer x > 1, not a pole: the checks
        # below decide the others, and every q below -2**53 is a pole).
        summed = (q < 0) & (q != np.floor(q)) & (x == np.floor(x)) & (x > 1) & (x < np.inf)
        n = 10 + np.where(summed, np.ceil(-np.where(summed, q, 0.0)), 0.0)
        if n.size and n.max() > ZETA_TERM_LIMIT:
            raise ValueError(
                f"zeta: q={q.flat[int(n.argmax())]} needs {int(n.max())} terms summed on the "
                f"host (it stops at {ZETA_TERM_LIMIT}); the torch:cpu backend computes it in its "
                "own kernel"
            )
        long = n > 64  # summed as whole arrays, one element at a time
        total = np.zeros_like(x)
        for k in range(int(np.where(long, 0, n).max()) if n.size else 0):
            total = total + np.where((k < n) & ~long, (q + k) ** -x, 0.0)
        for i in np.flatnonzero(long):
            terms = int(n.flat[i])
            for start in range(0, terms, 2**20):
                k = np.arange(start, min(start + 2**20, terms), dtype=np.float64)
                total.flat[i] += np.sum((q.flat[i] + k) ** -x.flat[i])
        w = q + n
        term = w**-x
        total = total + w * term / (x - 1) + 0.5 * term
        # Euler-Maclaurin: sum_j B_2j / (2j)! * x (x + 1) ... (x + 2j - 2) * w ** (1 - x - 2j).
        b = _bernoulli()
        rising = x * term / w
        for j in range(1, 13):
            total = total + float(b[2 * j] / math.factorial(2 * j)) * rising
            rising = rising * (x + 2 * j - 1) * (x + 2 * j) / (w * w)
        # x = inf: Cephes's loop returns its sum once a term is below its precision: inf
        # when some |q + k| < 1 (any q < 1), 1 at q = 1, and NaN (0 / 0) for q > 1.
        at_inf = np.where(q < 1, np.inf, np.where(q == 1, 1.0, np.nan))
        total = np.where(x == np.inf, at_inf, total)
        # Cephes's checks, the first that holds winning (so applied here last): inf at x = 1
        # (even for a NaN q), NaN below; at q = 0, -1, ... inf (even for a NaN x); for
        # other q < 0, NaN unless x is an integer. A NaN otherwise propagates through the sum.
        total = np.where((q < 0) & (x != np.floor(x)), np.nan, total)
        total = np.where((q <= 0) & (q == np.floor(q)), np.inf, total)
        return np.where(x < 1, np.nan, np.where(x == 1, np.inf, total))


def polygamma(n: int, x: Any) -> np.ndarray:
    """The n-th derivative of digamma: (-1) ** (n + 1) * n! * zeta(n + 1, x) for n >= 1."""
    if n == 0:
        return digamma(x)
    return (-1.0) ** (n + 1) * float(math.factorial(n)) * zeta(n + 1.0, x)


def _exp_square(x: np.ndarray) -> np.ndarray:
    """exp(x * x) without the rounding of x * x: x = hi + lo with hi's square exact (|x| < 27;
    beyond, exp(x * x) overflows anyway)."""
    x = np.minimum(x, 27.0)
    t = 134217729.0 * x  # 2**27 + 1: Veltkamp's split into two 26-bit halves
    hi = t - (t - x)
    lo = x - hi
    return np.exp(hi * hi) * np.exp(lo * (2 * hi + lo))


def erfcx(x: Any) -> np.ndarray:
    """exp(x**2) * erfc(x), finite where erfc underflows (large x)."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        ax = np.abs(x)
        near = np.minimum(ax, 25.0)
        direct = _exp_square(near) * erfc(near)
        # erfcx(x) ~ 1 / (x sqrt(pi)) * sum((-1)**k (2k - 1)!! / (2 x**2)**k).
        big = np.maximum(ax, 25.0)
        z = 1 / (2 * big * big)
        series = np.ones_like(x)
        for k in range(12, 0, -1):
            series = 1 - (2 * k - 1) * z * series
        positive = np.where(ax < 25, direct, series / (big * _SQRT_PI))
        out = np.where(x < 0, 2 * _exp_square(ax) - positive, positive)
        return np.where(x == np.inf, 0.0, out)


def _erfinv_center(y: np.ndarray) -> np.ndarray:
    """erfinv for |y| <= 0.5: Halley's iteration on erf, from the series' first two terms
    (1% off at most: two cubic steps reach full precision, a third makes sure)."""
    x = y * (_SQRT_PI / 2) * (1 + math.pi * y * y / 12)
    for _ in range(3):
        f = _erf(x) - y
        slope = 2 / _SQRT_PI * np.exp(-x * x)
        x = x - f / (slope + x * f)
    return x


def _erfcinv_tail(q: np.ndarray) -> np.ndarray:
    """The x > 0 with erfc(x) = q, for 0 < q < 0.5: Halley's iteration on g(x) = log(erfc(x))
    - log(q), which keeps full relative precision however small q is. With r = 2 / (sqrt(pi)
    erfcx(x)), g = log(erfcx(x)) - x**2 - log(q), g' = -r and g'' = r (2x - r). The start
    solves erfc(x) ~ exp(-x**2) / (x sqrt(pi)) once: within 15% at q = 0.5, closer below."""
    log_q = np.log(q)
    x = np.sqrt(-log_q - 0.5 * np.log(-math.pi * log_q))
    for _ in range(4):
        e = erfcx(x)
        g = np.log(e) - x * x - log_q
        r = 2 / (_SQRT_PI * e)
        x = x + 2 * g * r / (2 * r * r - g * r * (2 * x - r))
    return x


def _erfcinv(q: np.ndarray) -> np.ndarray:
    """erfcinv(q) for q in [0, 2] (+inf at 0, -inf at 2, NaN outside); each part computed on
    its own elements only (1 - q and 2 - q are exact where they are used)."""
    out = np.full(q.shape, np.nan)
    low, high = (q > 0) & (q < 0.5), (q > 1.5) & (q < 2)
    middle = np.abs(1 - q) <= 0.5
    with np.errstate(all="ignore"):
        out[low] = _erfcinv_tail(q[low])
        out[high] = -_erfcinv_tail(2 - q[high])
        out[middle] = _erfinv_center(1 - q[middle])
    out[q == 0] = np.inf
    out[q == 2] = -np.inf
    return out


def erfinv(y: Any) -> np.ndarray:
    """The inverse of erf on [-1, 1] (±inf at ±1, NaN outside)."""
    y = _f64(y)
    out = np.full(y.shape, np.nan)
    center = np.abs(y) <= 0.5
    tail = ~center & ~np.isnan(y)
    out[center] = _erfinv_center(y[center])
    # 1 - |y| is exact for |y| >= 0.5: the tail keeps erfc's relative precision.
    out[tail] = np.copysign(1.0, y[tail]) * _erfcinv(1 - np.abs(y[tail]))
    return out


def ndtri(p: Any) -> np.ndarray:
    """The inverse of the standard normal CDF: -sqrt(2) * erfcinv(2 p)."""
    return -_SQRT2 * _erfcinv(2 * _f64(p))


def log_ndtr(x: Any) -> np.ndarray:
    """log of the standard normal CDF, accurate far into the lower tail."""
    x = _f64(x)
    with np.errstate(all="ignore"):
        low = np.minimum(x, -1.0)
        tail = np.log(erfcx(-low / _SQRT2) / 2) - low * low / 2
        high = np.maximum(x, -1.0)
        return np.where(x < -1, tail, np.log1p(-erfc(high / _SQRT2) / 2))


def _bessel(nu: int, x: Any, scaled: bool) -> np.ndarray:
    """I_nu(x) for nu in (0, 1), or exp(-|x|) I_nu(x) when ``scaled``; each series on its
    own elements only."""
    x = _f64(x)
    ax = np.abs(x)
    out = np.full(x.shape, np.nan)  # NaN stays NaN: it is in neither part
    small, big = ax < 20, ax >= 20
    with np.errstate(all="ignore"):
        out[small] = _bessel_series(nu, ax[small], scaled)
        out[big] = _bessel_asymptotic(nu, ax[big], scaled)
    return np.copysign(out, x) if nu == 1 else out  # i1 is odd (-0.0 included)


def _bessel_series(nu: int, s: np.ndarray, scaled: bool) -> np.ndarray:
    """sum((s/2)**(2k + nu) / (k! (k + nu)!)) for 0 <= s < 20: all terms positive."""
    quarter = s * s / 4
    term = (s / 2) ** nu
    total = term.copy()
    for k in range(1, 60):
        term = term * quarter / (k * (k + nu))
        total = total + term
    return total * np.exp(-s) if scaled else total


def _bessel_asymptotic(nu: int, s: np.ndarray, scaled: bool) -> np.ndarray:
    """e**s / sqrt(2 pi s) * sum((-1)**k a_k / s**k) for s >= 20, with
    a_k = prod_{j <= k} (4 nu**2 - (2j - 1)**2) / (k! 8**k)."""
    a = np.ones_like(s)
    total = np.ones_like(s)
    for k in range(1, 40):
        a = a * -(4 * nu * nu - (2 * k - 1) ** 2) / (k * 8 * s)
        total = total + a
    total = total / np.sqrt(2 * math.pi * s)
    if scaled:
        return total
    half = np.exp(s / 2)  # two halves: finite up to the true overflow
    # At inf, NaN: Cephes's value, which torch's and SciPy's kernels give.
    return np.where(s == np.inf, np.nan, total * half * half)


def i0(x: Any) -> np.ndarray:
    return _bessel(0, x, False)


def i0e(x: Any) -> np.ndarray:
    return _bessel(0, x, True)


def i1(x: Any) -> np.ndarray:
    return _bessel(1, x, False)


def i1e(x: Any) -> np.ndarray:
    return _bessel(1, x, True)
