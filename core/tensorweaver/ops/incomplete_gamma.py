"""The regularized incomplete gamma functions ``tw.igamma`` (lower, P(a, x)) and
``tw.igammac`` (upper, Q(a, x) = 1 - P(a, x)), as tensor ops on the tensors' device.

Where x < a + 1, P comes from its power series; elsewhere Q from its continued fraction
(modified Lentz), so that neither is found as 1 minus a number near 1. Iterations stop once
every element has converged to float64's precision (at most ``_TERMS``, enough for a up to
about 1e5). Special values are PyTorch's: NaN for a < 0, x < 0, a = x = 0 or a = x = inf.
The gradient with respect to x is ``exp(-x) x**(a-1) / Gamma(a)`` (negated for igammac);
with respect to a it is not implemented, as in PyTorch.
"""

from __future__ import annotations

from typing import Any

from tensorweaver.autograd.function import Function
from tensorweaver.autograd.mode import no_grad
from tensorweaver.contract import dtypes
from tensorweaver.ops import coordinates as co
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.out_arguments import _refuse_overlapping_operands
from tensorweaver.ops.special import lgamma
from tensorweaver.ops.spellings import broadcast_tensors
from tensorweaver.promotion import result_type
from tensorweaver.tensor import Tensor

_TERMS = 4000
_CHECK_EVERY = 16  # converged? asked of the device this often (each ask is a host sync)
_EPS = 1e-17  # the series' terms fall steadily: stop well below float64's precision
_ONE_ULP = 2.3e-16  # the fraction's factors settle at 1 to within one unit of float64
_TINY = 1e-300


def _converged(error: Tensor, bound: Tensor | float) -> bool:
    return bool((ew.abs(error) <= bound).all().item())


def _series(a: Tensor, x: Tensor) -> Tensor:
    """P(a, x) by its power series (for x < a + 1)."""
    term = ew.reciprocal(a)
    total = term
    for n in range(1, _TERMS):
        term = term * x / (a + n)
        total = total + term
        if n % _CHECK_EVERY == 0 and _converged(term, ew.abs(total) * _EPS):
            break
    return total * ew.exp(a * ew.log(x) - x - lgamma(a))


def _fraction(a: Tensor, x: Tensor) -> Tensor:
    """Q(a, x) by its continued fraction (for x >= a + 1)."""
    b = x + 1 - a
    c = cr.full_like(b, 1 / _TINY)
    d = ew.reciprocal(b)
    h = d
    for i in range(1, _TERMS):
        an = (a - i) * i
        b = b + 2
        d = an * d + b
        d = co.where(ew.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = co.where(ew.abs(c) < _TINY, _TINY, c)
        d = ew.reciprocal(d)
        delta = d * c
        h = h * delta
        if i % _CHECK_EVERY == 0 and _converged(delta - 1, _ONE_ULP):
            break
    return h * ew.exp(a * ew.log(x) - x - lgamma(a))


def _regularized(a: Tensor, x: Tensor, upper: bool) -> Tensor:
    """P(a, x), or Q(a, x) when ``upper``, for float64 ``a`` and ``x`` of one shape."""
    nan = float("nan")
    regular = (a > 0) & (x > 0) & ew.isfinite(a) & ew.isfinite(x)
    safe_a, safe_x = co.where(regular, a, 1.0), co.where(regular, x, 1.0)
    use_series = safe_x < safe_a + 1
    lower = co.where(use_series, safe_a, 1.0), co.where(use_series, safe_x, 0.5)
    # An empty input takes the series so that one of p and q exists.
    p = _series(*lower) if bool(use_series.any().item()) or a.numel() == 0 else None
    upper_args = co.where(use_series, 1.0, safe_a), co.where(use_series, 3.0, safe_x)
    q = _fraction(*upper_args) if bool((~use_series).any().item()) else None
    if p is None:
        p = 1 - q
    if q is None:
        q = 1 - p
    value = co.where(use_series, 1 - p, q) if upper else co.where(use_series, p, 1 - q)
    # PyTorch's edges, checked in its order (the first that holds wins, so applied here
    # last): NaN for a < 0 or x < 0; P(0, x > 0) = 1; P(a, 0) = 0; P(inf, x) = 0 (NaN for
    # x = inf); P(a, inf) = 1. Only then does a NaN argument give NaN.
    one, zero = (0.0, 1.0) if upper else (1.0, 0.0)
    value = co.where(ew.isnan(a) | ew.isnan(x), nan, value)
    value = co.where(ew.isinf(x), one, value)
    value = co.where(ew.isinf(a), co.where(ew.isinf(x), nan, zero), value)
    value = co.where(x == 0, zero, value)
    value = co.where(a == 0, co.where(x > 0, one, nan), value)
    return co.where((a < 0) | (x < 0), nan, value).to(dtypes.float64)


class _IncompleteGamma(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor, x: Tensor, upper: bool, dtype: Any) -> Tensor:
        a64, x64 = a.to(dtypes.float64), x.to(dtypes.float64)
        ctx.save_for_backward(a64, x64)
        ctx.upper, ctx.dtype = upper, (a.dtype, x.dtype)
        return _regularized(a64, x64, upper).to(dtype)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            name = "igammac" if ctx.upper else "igamma"
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        density = ew.exp((a - 1) * ew.log(x) - x - lgamma(a))
        dx = grad.to(dtypes.float64) * (-density if ctx.upper else density)
        return None, dx.to(ctx.dtype[1]), None, None


def _apply(input: Tensor, other: Tensor, upper: bool, fn: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(
            f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    if not isinstance(other, Tensor):
        raise TypeError(
            f"{fn}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}"
        )
    dtype = result_type(input, other)
    if not dtype.is_floating_point:
        raise NotImplementedError(
            f"{fn} is not implemented for {dtype.name} (integer or bool) inputs; convert them "
            "with .float()"
        )
    a, x = broadcast_tensors(input, other)
    if ew.inference_alone(input, other):  # (PyTorch's autograd skips inference tensors alone)
        with no_grad():
            return _IncompleteGamma.apply(a, x, upper, dtype)
    return labelled(_IncompleteGamma.apply(a, x, upper, dtype), _NODE_NAMES[upper], input, other)


#: PyTorch's node names.
_NODE_NAMES = {False: "IgammaBackward0", True: "IgammacBackward0"}


def igamma(input: Tensor, other: Tensor) -> Tensor:
    """P(input, other): the regularized lower incomplete gamma function."""
    return _apply(input, other, False, "igamma")


def igammac(input: Tensor, other: Tensor) -> Tensor:
    """Q(input, other) = 1 - P(input, other): the regularized upper one."""
    return _apply(input, other, True, "igammac")


def igamma_(self: Tensor, other: Tensor) -> Tensor:
    _refuse_overlapping_operands(self, "igamma_", (other,), {})
    return self._assign(igamma(self._inplace_source(), other), "igamma_")


def igammac_(self: Tensor, other: Tensor) -> Tensor:
    _refuse_overlapping_operands(self, "igammac_", (other,), {})
    return self._assign(igammac(self._inplace_source(), other), "igammac_")
