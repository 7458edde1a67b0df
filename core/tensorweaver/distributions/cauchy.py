"""``Cauchy(loc, scale)``: the ratio of two standard normals, shifted and scaled."""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.distribution import Distribution, nan_like
from tensorweaver.distributions.params import broadcast_all
from tensorweaver.ops.creation import full, rand
from tensorweaver.ops.special import atan
from tensorweaver.tensor import Size, Tensor


class Cauchy(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Cauchy:
        return self._expanded(Cauchy, batch_shape, _instance, "loc", "scale")

    @property
    def mean(self) -> Tensor:
        return nan_like(self._extended_shape(), self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        shape = tuple(self._extended_shape())
        return full(shape, float("inf"), dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - z.pow(2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return ((value - 0.5) * math.pi).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()
