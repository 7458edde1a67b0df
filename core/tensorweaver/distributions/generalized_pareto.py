"""``GeneralizedPareto(loc, scale, concentration)``: the peaks-over-threshold law; the
exponential at ``concentration = 0``, bounded above for ``concentration < 0``."""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.params import broadcast_all
from tensorweaver.ops.creation import rand
from tensorweaver.ops.numeric import isclose
from tensorweaver.tensor import Size, Tensor


class GeneralizedPareto(Distribution):
    arg_constraints = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "concentration": constraints.real,
    }
    has_rsample = True

    def __init__(
        self, loc: Any, scale: Any, concentration: Any, validate_args: bool | None = None
    ) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> GeneralizedPareto:
        return self._expanded(
            GeneralizedPareto, batch_shape, _instance, "loc", "scale", "concentration"
        )

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        upper = (self.loc - self.scale / self.concentration).where(
            self.concentration < 0, self.loc * 0 + math.inf
        )
        return constraints.interval(self.loc, upper)

    def _zero_and_safe(self) -> tuple[Tensor, Tensor]:
        """Where the concentration is 0 (the exponential limit), and the concentration with
        those places set to 1 so that the general formulas stay finite there."""
        zero = isclose(self.concentration, self.concentration * 0)
        return zero, self.concentration.masked_fill(zero, 1.0)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return self.icdf(rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, c = self._zero_and_safe()
        y = 1 / c + 1
        general = (y * (c * z).log1p()).where(y != 0, y)
        return -self.scale.log() - z.where(zero, general)

    def log_survival_function(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, c = self._zero_and_safe()
        return (-z).where(zero, -(c * z).log1p() / c)

    def log_cdf(self, value: Tensor) -> Tensor:
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        zero, c = self._zero_and_safe()
        log_u = (-value).log1p()
        general = self.loc + self.scale / c * (-c * log_u).expm1()
        return (self.loc - self.scale * log_u).where(zero, general)

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        c = self.concentration.where(valid, self.concentration * 0 + 0.5)
        return (self.loc + self.scale / (1 - c)).masked_fill(~valid, float("nan"))

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        c = self.concentration.where(valid, self.concentration * 0 + 0.25)
        var = self.scale.pow(2) / ((1 - c).pow(2) * (1 - 2 * c))
        return var.masked_fill(~valid, float("nan"))

    @property
    def mode(self) -> Tensor:
        return self.loc

    def entropy(self) -> Tensor:
        return (self.scale.log() + self.concentration + 1).expand(self.batch_shape)
