"""``StudentT(df, loc=0.0, scale=1.0)``: a normal draw over the square root of an independent
chi-squared draw divided by its degrees of freedom, reparameterized through both."""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.gamma import Chi2
from tensorweaver.distributions.params import broadcast_all
from tensorweaver.ops.creation import full_like, randn
from tensorweaver.ops.special import digamma, lgamma
from tensorweaver.tensor import Size, Tensor


class StudentT(Distribution):
    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(
        self, df: Any, loc: Any = 0.0, scale: Any = 1.0, validate_args: bool | None = None
    ) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df, validate_args=False)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> StudentT:
        new = self._expanded(StudentT, batch_shape, _instance, "df", "loc", "scale")
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self) -> Tensor:
        return self.loc.masked_fill(self.df <= 1, float("nan"))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2).where(df > 2, full_like(df, 1.0))
        infinite = full_like(df, float("inf")).masked_fill(df <= 1, float("nan"))
        return finite.where(df > 2, infinite)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        normal = randn(shape, dtype=self.df.dtype, device=self.df.device)
        chi2 = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * normal * (chi2 / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        half = 0.5 * self.df
        log_norm = (
            self.scale.log()
            + 0.5 * self.df.log()
            + 0.5 * math.log(math.pi)
            + lgamma(half)
            - lgamma(half + 0.5)
        )
        return -(half + 0.5) * (y.pow(2) / self.df).log1p() - log_norm

    def entropy(self) -> Tensor:
        half = 0.5 * self.df
        log_beta = lgamma(half) + math.lgamma(0.5) - lgamma(half + 0.5)
        return (
            self.scale.log()
            + (half + 0.5) * (digamma(half + 0.5) - digamma(half))
            + 0.5 * self.df.log()
            + log_beta
        )
