"""``LogNormal(loc, scale)``: ``exp`` of a Normal(loc, scale) draw."""

from __future__ import annotations

from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.normal import Normal
from tensorweaver.distributions.transformed_distribution import TransformedDistribution
from tensorweaver.distributions.transforms import ExpTransform
from tensorweaver.tensor import Tensor


class LogNormal(TransformedDistribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> LogNormal:
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self) -> Tensor:
        var = self.scale.pow(2)
        return var.expm1() * (2 * self.loc + var).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc
