"""``InverseGamma(concentration, rate)``: the reciprocal of a Gamma(concentration, rate)
draw."""

from __future__ import annotations

from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.gamma import Gamma
from tensorweaver.distributions.transformed_distribution import TransformedDistribution
from tensorweaver.distributions.transforms import PowerTransform
from tensorweaver.ops.creation import full
from tensorweaver.ops.special import digamma, lgamma
from tensorweaver.tensor import Tensor


class InverseGamma(TransformedDistribution):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        base = Gamma(concentration, rate, validate_args=validate_args)
        # -1 in the parameters' dtype: a default-dtype 0-d exponent promoted float32 draws
        # of 0-d parameters to float64 (PyTorch: -rate.new_ones(()))
        minus_one = full((), -1.0, dtype=base.rate.dtype, device=base.rate.device)
        super().__init__(base, PowerTransform(minus_one), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> InverseGamma:
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        a = self.concentration
        return (self.rate / (a - 1)).masked_fill(a <= 1, float("inf"))

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        a = self.concentration
        var = self.rate.square() / ((a - 1).square() * (a - 2))
        return var.masked_fill(a <= 2, float("inf"))

    def entropy(self) -> Tensor:
        a = self.concentration
        return a + self.rate.log() + lgamma(a) - (1 + a) * digamma(a)
