"""``Kumaraswamy(concentration1, concentration0)``: ``(1 - U ** (1 / b)) ** (1 / a)`` for a
uniform draw ``U``, a Beta look-alike with a closed-form cdf."""

from __future__ import annotations

from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.gumbel import EULER_GAMMA
from tensorweaver.distributions.params import broadcast_all
from tensorweaver.distributions.transformed_distribution import TransformedDistribution
from tensorweaver.distributions.transforms import AffineTransform, PowerTransform
from tensorweaver.distributions.uniform import Uniform
from tensorweaver.ops.creation import full_like
from tensorweaver.ops.special import digamma, lgamma
from tensorweaver.tensor import Tensor


def _moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    """E[X ** n] = b * B(1 + n / a, b)."""
    arg = 1 + n / a
    return b * (lgamma(arg) + lgamma(b) - lgamma(arg + b)).exp()


class Kumaraswamy(TransformedDistribution):
    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self, concentration1: Any, concentration0: Any, validate_args: bool | None = None
    ) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(
            full_like(self.concentration0, 0),
            full_like(self.concentration0, 1),
            validate_args=validate_args,
        )
        super().__init__(base, self._transforms(), validate_args=validate_args)

    def _transforms(self) -> list:
        return [
            PowerTransform(exponent=self.concentration0.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=self.concentration1.reciprocal()),
        ]

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Kumaraswamy:
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        new = super().expand(batch_shape, _instance=new)
        new.transforms = new._transforms()
        return new

    @property
    def mean(self) -> Tensor:
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        # ((a - 1) / (a b - 1)) ** (1 / a), in log space; none below a = 1 or b = 1
        a, b = self.concentration1, self.concentration0
        log_mode = ((a - 1).log() - (a * b - 1).log()) / a
        return log_mode.masked_fill((a < 1) | (b < 1), float("nan")).exp()

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return _moment(a, b, 2) - _moment(a, b, 1).pow(2)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        harmonic_b = digamma(b + 1) + EULER_GAMMA
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - a.log() - b.log()
