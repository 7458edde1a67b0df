"""Gamma, Poisson and binomial draws, and the gamma draw's reparameterized gradient.

These draws take rejection loops that no IR primitive offers, so they are made on the host
from TensorWeaver's default generator (seeded by ``tw.manual_seed``, the same stream on
every backend) and copied to the parameter's device, as ``generator=`` draws are.

A gamma draw ``x`` of concentration ``a`` is differentiable in ``a`` by implicit
reparameterization: ``x`` is the ``u``-quantile of Gamma(a, 1) for a fixed uniform ``u``, so
``dx/da = -(dP/da)(a, x) / p(x; a)`` with ``P`` the regularized lower incomplete gamma
function and ``p`` the density. ``P`` is computed by its series (``x < a + 1``) or its
continued fraction, and ``dP/da`` by a central difference in ``a`` (relative step 1e-4,
error about 1e-8): written here because NumPy has no incomplete gamma function and the core
does not depend on SciPy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorweaver.autograd.function import Function
from tensorweaver.ops.creation import as_tensor
from tensorweaver.random import default_generator
from tensorweaver.tensor import Tensor

_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def _host(t: Tensor) -> np.ndarray:
    return t.backend.to_host(t.native).astype(np.float64)  # (the library's read: no __array__)


def _like(values: np.ndarray, like: Tensor) -> Tensor:
    return as_tensor(values, dtype=like.dtype, device=like.device)


def _lower_regularized_gamma(a: np.ndarray, x: np.ndarray, terms: int = 400) -> np.ndarray:
    """P(a, x) for a > 0, x >= 0, elementwise (a and x of one shape)."""
    out = np.zeros_like(x)
    series = x < a + 1
    if series.any():
        aa, xx = a[series], x[series]
        term = np.full_like(xx, 1.0) / aa
        total = term.copy()
        for n in range(1, terms):
            term = term * xx / (aa + n)
            total = total + term
            if np.all(np.abs(term) < np.abs(total) * 1e-17):
                break
        log_front = -xx + aa * np.log(np.where(xx > 0, xx, 1.0)) - _lgamma(aa)
        out[series] = np.where(xx > 0, total * np.exp(log_front), 0.0)
    fraction = ~series
    if fraction.any():  # Q(a, x) by Lentz's method on the continued fraction
        aa, xx = a[fraction], x[fraction]
        tiny = 1e-300
        b = xx + 1 - aa
        c = np.full_like(xx, 1 / tiny)
        d = 1 / b
        h = d.copy()
        for i in range(1, terms):
            an = -i * (i - aa)
            b = b + 2
            d = an * d + b
            d = np.where(np.abs(d) < tiny, tiny, d)
            c = b + an / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            d = 1 / d
            delta = d * c
            h = h * delta
            if np.all(np.abs(delta - 1) < 1e-16):
                break
        q = np.exp(-xx + aa * np.log(xx) - _lgamma(aa)) * h
        out[fraction] = 1 - q
    return out


def standard_gamma_grad(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """dx/da of a Gamma(a, 1) draw x, holding its quantile fixed."""
    h = 1e-4 * np.maximum(a, 1e-2)
    up = _lower_regularized_gamma(a + h, x)
    down = _lower_regularized_gamma(np.maximum(a - h, 1e-300), x)
    dp_da = (up - down) / (2 * h)
    log_density = (a - 1) * np.log(x) - x - _lgamma(a)
    return -dp_da / np.exp(log_density)


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx: Any, concentration: Tensor) -> Tensor:
        a = _host(concentration)
        x = default_generator._rng.standard_gamma(a)
        x = np.maximum(x, np.finfo(concentration.dtype.numpy_name).tiny)
        out = _like(x, concentration)
        ctx.save_for_backward(concentration, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        concentration, x = ctx.saved_tensors
        dx_da = standard_gamma_grad(_host(x), _host(concentration))
        return grad * _like(dx_da, concentration)


def standard_gamma(concentration: Tensor) -> Tensor:
    """Gamma(concentration, 1) draws of ``concentration``'s shape, differentiable in it."""
    return _StandardGamma.apply(concentration)


def poisson(rate: Tensor) -> Tensor:
    """Poisson draws of ``rate``'s shape and dtype (no gradient)."""
    # np.asarray: a 0-d rate draws a Python int.
    return _like(np.asarray(default_generator._rng.poisson(_host(rate)), np.float64), rate)


def binomial(total_count: Tensor, probs: Tensor) -> Tensor:
    """Binomial draws (no gradient); ``total_count`` and ``probs`` of one shape."""
    n = _host(total_count).astype(np.int64)
    return _like(np.asarray(default_generator._rng.binomial(n, _host(probs)), np.float64), probs)
