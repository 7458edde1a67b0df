"""``Weibull(scale, concentration)``: ``scale * E ** (1 / concentration)`` for a standard
exponential draw ``E``."""

from __future__ import annotations

from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.exponential import Exponential
from tensorweaver.distributions.gumbel import EULER_GAMMA
from tensorweaver.distributions.params import broadcast_all
from tensorweaver.distributions.transformed_distribution import TransformedDistribution
from tensorweaver.distributions.transforms import AffineTransform, PowerTransform
from tensorweaver.ops.creation import ones_like
from tensorweaver.ops.special import lgamma
from tensorweaver.tensor import Tensor


class Weibull(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        base = Exponential(ones_like(self.scale), validate_args=validate_args)
        super().__init__(base, self._transforms(), validate_args=validate_args)

    def _transforms(self) -> list:
        return [
            PowerTransform(exponent=self.concentration_reciprocal),
            AffineTransform(loc=0, scale=self.scale),
        ]

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Weibull:
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new = super().expand(batch_shape, _instance=new)
        new.transforms = new._transforms()
        return new

    @property
    def concentration_reciprocal(self) -> Tensor:
        return self.concentration.reciprocal()

    @property
    def mean(self) -> Tensor:
        return self.scale * lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self) -> Tensor:
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self) -> Tensor:
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (lgamma(1 + 2 * r).exp() - (2 * lgamma(1 + r)).exp())

    def entropy(self) -> Tensor:
        r = self.concentration_reciprocal
        return EULER_GAMMA * (1 - r) + (self.scale * r).log() + 1
