"""torch.special's orthogonal polynomials of degree ``n``: Chebyshev (T, U, V, W and their
shifted forms on [0, 1]), Hermite (physicists' H, probabilists' He), Laguerre and Legendre.

As PyTorch: ``n`` is truncated to an integer (a negative or NaN degree gives 0), values come
from the three-term recurrences (Chebyshev's trigonometric forms for high degrees inside
[-1, 1]), with PyTorch's exact values at the interval's ends. The ops are
:mod:`tensorweaver.special.no_gradient`'s (no derivative, as PyTorch's).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweaver.special.no_gradient import binary

#: How many steps the host recurrence takes before it gives up (~8 us a step: ~2 s; a degree
#: of 2**40 would never end), unless every element left went inf or NaN before.
HOST_STEP_LIMIT = 2**18


def _recurrence(
    x: np.ndarray, n: np.ndarray, first: np.ndarray, step: Callable, closed: Any = False
) -> np.ndarray:
    """P_n(x) from P_0 = 1, P_1 = ``first`` and P_{k+1} = step(k, x, P_k, P_{k-1}), each
    element to its own degree (n >= 2 where this is used); elements where ``closed`` holds
    (a closed form replaces them) are not run."""
    previous, current = np.ones_like(x), first
    out = np.where(n == 1, first, 1.0)
    n = np.where(closed, 1, n)
    top = int(n.max()) if n.size else 0
    for k in range(1, top):
        if k > HOST_STEP_LIMIT:
            raise ValueError(
                f"degree n={top} takes {top} steps of the recurrence on the host (it stops "
                f"at {HOST_STEP_LIMIT}); the torch:cpu backend computes it in its own kernel"
            )
        previous, current = current, step(k, x, current, previous)
        out = np.where(n == k + 1, current, out)
        if not np.isfinite(current[n > k + 1]).any():
            out = np.where(n > k + 1, current, out)  # inf or NaN stays so: stop early
            break
    return out


def _chebyshev(kind: str, x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """T, U, V or W of degree n at x, as PyTorch's kernels compute them."""
    odd = n % 2 == 1
    theta = np.arccos(np.clip(x, -1.0, 1.0))
    inside = np.abs(x) < 1
    if kind == "t":
        ends = np.where((x > 0) | ~odd, 1.0, -1.0)
        closed, big = np.cos(n * theta), 6
    elif kind == "u":
        ends = np.where((x > 0) | ~odd, n + 1.0, -(n + 1.0))
        closed = np.where(
            np.sin(theta) != 0,
            np.sin((n + 1) * theta) / np.sin(theta),
            (n + 1) * np.cos((n + 1) * theta) / x,
        )
        big = 8
    elif kind == "v":
        ends = np.where(x > 0, 1.0, np.where(odd, -(2.0 * n + 1), 2.0 * n + 1))
        closed = np.where(
            np.sin(theta / 2) != 1, np.cos((n + 0.5) * theta) / np.cos(theta / 2), ends
        )
        big = 8
    else:
        ends = np.where(x > 0, 2.0 * n + 1, np.where(odd, -1.0, 1.0))
        closed = np.where(
            np.cos(theta / 2) != 1, np.sin((n + 0.5) * theta) / np.sin(theta / 2), ends
        )
        big = 8
    first = {"t": x, "u": 2 * x, "v": 2 * x - 1, "w": 2 * x + 1}[kind]
    by_formula = ((n > big) & inside) | (np.abs(x) == 1)
    out = _recurrence(x, n, first, lambda k, x, p, q: 2 * x * p - q, by_formula)
    out = np.where((n > big) & inside, closed, out)
    return np.where(np.abs(x) == 1, ends, out)


def _hermite_h(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    return _recurrence(x, n, 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q)


def _hermite_he(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    return _recurrence(x, n, x, lambda k, x, p, q: x * p - k * q)


def _laguerre(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    def step(k: int, x: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        return ((2 * k + 1 - x) * p - k * q) / (k + 1)

    out = _recurrence(x, n, 1 - x, step, x == 0)
    return np.where(x == 0, 1.0, out)


def _legendre(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    def step(k: int, x: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        return ((2 * k + 1) * x * p - k * q) / (k + 1)

    out = _recurrence(x, n, x, step, np.abs(x) == 1)
    ends = np.where((x > 0) | (n % 2 == 0), 1.0, -1.0)
    return np.where(np.abs(x) == 1, ends, out)


def _host(name: str, kernel: Callable, shifted: bool) -> Callable:
    def host(x: Any, n: Any) -> np.ndarray:
        # in the input's own float type: float32 overflows where PyTorch's float32 does
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            # PyTorch's static_cast<int64_t>: truncation; NaN lands on a negative degree
            degree = np.trunc(np.nan_to_num(np.asarray(n, dtype=x.dtype), nan=-1.0))
            # and out of int64's range (inf too: the loop would never end) on INT64_MIN
            degree = np.where(np.abs(degree) >= 2.0**63, -1.0, degree)
            x, degree = np.broadcast_arrays(2 * x - 1 if shifted else x, degree)
            try:
                out = kernel(np.array(x), np.array(degree))
            except ValueError as e:
                raise ValueError(f"{name}: {e}") from None
            return np.where(degree < 0, 0.0, np.where(degree == 0, 1.0, out)).astype(x.dtype)

    return host


def _polynomial(name: str, kernel: Callable, shifted: bool = False) -> Callable:
    op = binary(name, _host(name, kernel, shifted))
    op.__doc__ = f"torch.special.{name}(input, n): see the module's docstring."
    return op


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", lambda x, n: _chebyshev("t", x, n))
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", lambda x, n: _chebyshev("u", x, n))
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", lambda x, n: _chebyshev("v", x, n))
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", lambda x, n: _chebyshev("w", x, n))
shifted_chebyshev_polynomial_t = _polynomial(
    "shifted_chebyshev_polynomial_t", lambda x, n: _chebyshev("t", x, n), shifted=True
)
shifted_chebyshev_polynomial_u = _polynomial(
    "shifted_chebyshev_polynomial_u", lambda x, n: _chebyshev("u", x, n), shifted=True
)
shifted_chebyshev_polynomial_v = _polynomial(
    "shifted_chebyshev_polynomial_v", lambda x, n: _chebyshev("v", x, n), shifted=True
)
shifted_chebyshev_polynomial_w = _polynomial(
    "shifted_chebyshev_polynomial_w", lambda x, n: _chebyshev("w", x, n), shifted=True
)
hermite_polynomial_h = _polynomial("hermite_polynomial_h", _hermite_h)
hermite_polynomial_he = _polynomial("hermite_polynomial_he", _hermite_he)
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", _laguerre)
legendre_polynomial_p = _polynomial("legendre_polynomial_p", _legendre)
