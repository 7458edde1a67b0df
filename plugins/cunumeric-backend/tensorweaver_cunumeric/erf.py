"""The error function on cuPyNumeric arrays, to float64 precision (cuPyNumeric has no erf).

The method and coefficients are those of fdlibm's ``s_erf.c`` (Sun Microsystems, 1993,
freely redistributable), whose rational approximations are accurate to under one ulp:

* ``|x| < 0.84375``: ``erf = x + x * P1(x²)/Q1(x²)``
* ``|x| < 1.25``: ``erf = erx + P2(s)/Q2(s)`` with ``s = |x| - 1``
* ``|x| < 6``: ``erf = 1 - exp(-x² - 0.5625 + R(w)/S(w)) / |x|`` with ``w = 1/x²`` and one
  of two (R, S) pairs, split at ``|x| = 1/0.35``
* otherwise ``±1``; NaN stays NaN.

Each cuPyNumeric call is a Legate task (about 0.4 ms on one CPU), so rather than evaluate
eight polynomials one by one (about 100 calls), all eight are evaluated at once by Horner's
rule on an (8, n) stack of their arguments, with an (8, 1) column of coefficients per
degree: about 40 calls in all. fdlibm splits x² into exact halves for erfc's sake; for erf
the rounding of x² changes the result by far less than an ulp, so it is not done here.
"""

from __future__ import annotations

import numpy

_ERX = 8.45062911510467529297e-01

# Coefficients by ascending degree, one row per polynomial, in the order
# P1, Q1 (in x²), P2, Q2 (in |x|-1), Ra, Sa (in 1/x², |x| < 1/0.35), Rb, Sb (in 1/x²).
_ROWS = [
    [
        1.28379167095512558561e-01,
        -3.25042107247001499370e-01,
        -2.84817495755985104766e-02,
        -5.77027029648944159157e-03,
        -2.37630166566501626084e-05,
    ],
    [
        1.0,
        3.97917223959155352819e-01,
        6.50222499887672944485e-02,
        5.08130628187576562776e-03,
        1.32494738004321644526e-04,
        -3.96022827877536812320e-06,
    ],
    [
        -2.36211856075265944077e-03,
        4.14856118683748331666e-01,
        -3.72207876035701323847e-01,
        3.18346619901161753674e-01,
        -1.10894694282396677476e-01,
        3.54783043256182359371e-02,
        -2.16637559486879084300e-03,
    ],
    [
        1.0,
        1.06420880400844228286e-01,
        5.40397917702171048937e-01,
        7.18286544141962662868e-02,
        1.26171219808761642112e-01,
        1.36370839120290507362e-02,
        1.19844998467991074170e-02,
    ],
    [
        -9.86494403484714822705e-03,
        -6.93858572707181764372e-01,
        -1.05586262253232909814e01,
        -6.23753324503260060396e01,
        -1.62396669462573470355e02,
        -1.84605092906711035994e02,
        -8.12874355063065934246e01,
        -9.81432934416914548592e00,
    ],
    [
        1.0,
        1.96512716674392571292e01,
        1.37657754143519042600e02,
        4.34565877475229228821e02,
        6.45387271733267880336e02,
        4.29008140027567833386e02,
        1.08635005541779435134e02,
        6.57024977031928170135e00,
        -6.04244152148580987438e-02,
    ],
    [
        -9.86494292470009928597e-03,
        -7.99283237680523006574e-01,
        -1.77579549177547519889e01,
        -1.60636384855821916062e02,
        -6.37566443368389627722e02,
        -1.02509513161107724954e03,
        -4.83519191608651397019e02,
    ],
    [
        1.0,
        3.03380607434824582924e01,
        3.25792512996573918826e02,
        1.53672958608443695994e03,
        3.19985821950859553908e03,
        2.55305040643316442583e03,
        4.74528541206955367215e02,
        -2.24409524465858183362e01,
    ],
]
_DEGREE = max(len(r) for r in _ROWS) - 1
#: (degree + 1, 8, 1): the coefficient column of each degree, zero where a row is shorter.
_COLUMNS = numpy.array([r + [0.0] * (_DEGREE + 1 - len(r)) for r in _ROWS]).T[:, :, None]


class Erf:
    """``erf(a)`` for float64 cuPyNumeric arrays; holds the coefficients on the device."""

    def __init__(self, cn) -> None:
        self._cn = cn
        self._columns = [cn.array(c) for c in _COLUMNS]

    def __call__(self, a):
        cn = self._cn
        x = a.reshape((1, a.size))
        ax = cn.abs(x)
        z = ax * ax
        w = 1.0 / z
        s = ax - 1.0
        u = cn.concatenate([z, z, s, s, w, w, w, w])
        acc = self._columns[_DEGREE]
        for column in reversed(self._columns[:_DEGREE]):
            acc = acc * u + column
        ratio = _ratios(acc)
        small = ax + ax * ratio[0:1]
        near_one = _ERX + ratio[1:2]
        tail_rs = cn.where(ax < 1 / 0.35, ratio[2:3], ratio[3:4])
        tail = 1.0 - cn.exp(-z - 0.5625 + tail_rs) / ax
        # NaN fails every comparison, so it must fall through to `tail` (which is NaN).
        big = cn.where(ax >= 6.0, 1.0, tail)
        mag = cn.where(ax < 0.84375, small, cn.where(ax < 1.25, near_one, big))
        return cn.copysign(mag, x).reshape(a.shape)


def _ratios(acc):
    """Numerator / denominator rows of the Horner result, as a (4, n) array (by a reshape:
    cuPyNumeric has no strided slices)."""
    pairs = acc.reshape((4, 2, acc.shape[1]))
    return pairs[:, 0] / pairs[:, 1]
