"""``HalfNormal(scale)`` and ``HalfCauchy(scale)``: the absolute value of a zero-centred
Normal or Cauchy draw, and ``AbsTransform``, the fold that makes them."""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.cauchy import Cauchy
from tensorweaver.distributions.normal import Normal
from tensorweaver.distributions.transformed_distribution import TransformedDistribution
from tensorweaver.distributions.transforms import Transform
from tensorweaver.ops.creation import as_tensor, full_like, zeros_like
from tensorweaver.tensor import Tensor


class AbsTransform(Transform):
    """``y = |x|`` (not bijective: the inverse is the nonnegative branch)."""

    bijective = False
    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbsTransform)


class _Folded(TransformedDistribution):
    """A zero-centred symmetric base folded onto [0, inf): density and cdf doubled."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Any:
        new = self._get_checked_instance(type(self), _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.scale)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = self._as_value(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        # where(value >= 0, ...): a NaN value is outside the support too (-inf, as PyTorch)
        return log_prob.where(value >= 0, float("-inf"))

    def _as_value(self, value: Any) -> Any:
        """The value log_prob reads: as given (HalfCauchy: in the scale's dtype)."""
        return value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        # the base is not checked: a bad scale is reported under this distribution's name
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args)

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        # the base is not checked: a bad scale is reported under this distribution's name
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args)

    def _as_value(self, value: Any) -> Tensor:
        # PyTorch's: a float64 value gives float32 for a float32 scale; a number is taken
        return as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def mean(self) -> Tensor:
        return full_like(self.scale, float("inf"))

    @property
    def variance(self) -> Tensor:
        return full_like(self.scale, float("inf"))
