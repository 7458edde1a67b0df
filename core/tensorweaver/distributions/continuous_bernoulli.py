"""``ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501))``: the density on
[0, 1] proportional to ``probs ** x * (1 - probs) ** (1 - x)``, reparameterized through its
inverse cdf. Within ``lims`` of 1/2, where the closed forms divide 0 by 0, the moments and
normalizer are Taylor expansions about 1/2 (PyTorch's scheme)."""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.exponential_family import ExponentialFamily
from tensorweaver.distributions.params import (
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
)
from tensorweaver.distributions.probs_or_logits import SuccessProbability
from tensorweaver.nn.functional import binary_cross_entropy_with_logits
from tensorweaver.ops.creation import ones_like, rand, zeros_like
from tensorweaver.tensor import Size, Tensor


class ContinuousBernoulli(SuccessProbability, ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self,
        probs: Any = None,
        logits: Any = None,
        lims: tuple[float, float] = (0.499, 0.501),
        validate_args: bool | None = None,
    ) -> None:
        self._given("ContinuousBernoulli", probs, logits)
        if probs is not None:
            # checked before clamping away from 0 and 1, after which any value would pass
            if validate_args is not None and not bool(
                self.arg_constraints["probs"].check(self.probs).all()
            ):
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> ContinuousBernoulli:
        new = self._expanded_given(ContinuousBernoulli, batch_shape, _instance)
        new._lims = self._lims
        return new

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _stable(self) -> Tensor:
        """Where ``probs`` is far enough from 1/2 for the closed forms."""
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        """``probs``, replaced by a harmless constant where the Taylor forms take over."""
        return self.probs.where(self._stable(), self.probs * 0 + self._lims[0])

    def _log_norm(self) -> Tensor:
        p = self._cut_probs()
        below = p <= 0.5
        p_below = p.where(below, p * 0)
        p_above = p.where(p >= 0.5, p * 0 + 1)
        log_norm = ((-p).log1p() - p.log()).abs().log() - (-2.0 * p_below).log1p().where(
            below, (2.0 * p_above - 1.0).log()
        )
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return log_norm.where(self._stable(), taylor)

    @property
    def mean(self) -> Tensor:
        p = self._cut_probs()
        closed = p / (2.0 * p - 1.0) + 1.0 / ((-p).log1p() - p.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return closed.where(self._stable(), taylor)

    @property
    def variance(self) -> Tensor:
        p = self._cut_probs()
        closed = p * (p - 1.0) / (1.0 - 2.0 * p).pow(2) + 1.0 / ((-p).log1p() - p.log()).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return closed.where(self._stable(), taylor)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return self.icdf(rand(shape, dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        closed = (p.pow(value) * (1.0 - p).pow(1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inside = closed.where(self._stable(), value)
        # zeros_like, ones_like: value * 0 is NaN at value = -inf or inf
        return zeros_like(value).where(value <= 0.0, ones_like(value).where(value >= 1.0, inside))

    def icdf(self, value: Tensor) -> Tensor:
        p = self._cut_probs()
        closed = ((-p + value * (2.0 * p - 1.0)).log1p() - (-p).log1p()) / (p.log() - (-p).log1p())
        return closed.where(self._stable(), value)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    @property
    def _mean_carrier_measure(self) -> float:
        return 0.0

    def _log_normalizer(self, x: Tensor) -> Tensor:
        """log((e^x - 1) / x), by its Taylor series where x is near 0."""
        low, high = self._lims[0] - 0.5, self._lims[1] - 0.5
        stable = (x <= low) | (x > high)
        cut = x.where(stable, x * 0 + low)
        closed = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return closed.where(stable, taylor)

    def entropy(self) -> Tensor:
        log_p0 = (-self.probs).log1p()
        log_p1 = self.probs.log()
        return self.mean * (log_p0 - log_p1) - self._log_norm() - log_p0
