"""``tw.poisson`` and ``tw.binomial``: random counts, drawn on the host from the default
generator (or ``generator=``) as the other host draws are, returned in the rates' float
dtype on their device. Autograd sees them as PyTorch does: ``poisson``'s rates get a zero
gradient (through ``PoissonBackward0``); ``binomial``'s result requires grad where its count
or prob does, and backward through it raises (PyTorch defines no derivative)."""

from __future__ import annotations

import numpy as np

from tensorweaver.ops import creation as cr
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.order_stats import NO_DERIVATIVE, no_derivative
from tensorweaver.ops.sampling import drawn
from tensorweaver.random import Generator, default_generator
from tensorweaver.tensor import Tensor


def _float_input(t: Tensor, what: str, fn: str, error: type) -> np.ndarray:
    if not t.dtype.is_floating_point:
        raise error(
            f"{fn} only supports floating-point dtypes for {what}, got: {t.dtype.name}; "
            "convert it with .float()"
        )
    return t.backend.to_host(t.native).astype(np.float64)  # (the library's read: no __array__)


#: NumPy's largest Poisson rate (its generator's limit: int64's max less 10 sqrt of it).
_POISSON_MAX = np.iinfo(np.int64).max - np.sqrt(np.iinfo(np.int64).max) * 10


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Poisson draws, one per element of the rates ``input`` (non-negative)."""
    rates = _float_input(input, "rates", "poisson", NotImplementedError)
    if (rates < 0).any() or np.isnan(rates).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if (rates > _POISSON_MAX).any():
        # (torch answers -2**63 there; NumPy's generator refuses with a ValueError)
        raise RuntimeError(
            f"poisson: a rate of {rates.max()} is too large to draw from; rates up to "
            f"{_POISSON_MAX:.6g} are supported"
        )
    rng = (generator or default_generator)._rng
    # (a 0-d rate draws a Python int: as an array, so its dtype and shape hold)
    draws = np.asarray(rng.poisson(rates), dtype=np.float64)
    sample = cr.tensor(draws, dtype=input.dtype, device=input.device)
    return drawn(sample, "PoissonBackward0", input)


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """Binomial draws: successes in ``count`` trials of probability ``prob`` (broadcast);
    a probability outside [0, 1] is clamped to it, as PyTorch's sampler does."""
    n = _float_input(count, "count", "binomial", ValueError)
    p = _float_input(prob, "prob", "binomial", ValueError)
    if prob.dtype is not count.dtype:
        raise RuntimeError(
            f"binomial: found dtype {prob.dtype.name} for prob but expected {count.dtype.name} "
            f"(count's); convert prob with .to({count.dtype.name})"
        )
    if count.dtype.itemsize < 4:  # (PyTorch's CPU sampler has no half-precision form)
        raise NotImplementedError(
            f"binomial: not implemented for {count.dtype.name}; draw in float32 and convert"
        )
    n, p = np.broadcast_arrays(n, p)
    rng = (generator or default_generator)._rng
    draws = np.asarray(rng.binomial(n.astype(np.int64), np.clip(p, 0.0, 1.0)), dtype=np.float64)
    sample = cr.tensor(draws, dtype=count.dtype, device=count.device)
    error = RuntimeError(NO_DERIVATIVE.format("binomial"))
    needs = tuple(t for t in (count, prob) if t.requires_grad)  # (PyTorch's node's edges)
    return labelled(no_derivative(sample, needs, error), "NotImplemented", *needs)
