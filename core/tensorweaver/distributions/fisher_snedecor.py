"""``FisherSnedecor(df1, df2)``: the F distribution, a ratio of two scaled chi-squared
draws, reparameterized through both."""

from __future__ import annotations

from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.gamma import Gamma
from tensorweaver.distributions.params import broadcast_all
from tensorweaver.dtype_info import finfo
from tensorweaver.ops.special import lgamma
from tensorweaver.tensor import Size, Tensor


class FisherSnedecor(Distribution):
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Any, df2: Any, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(0.5 * self.df1, 0.5 * self.df1, validate_args=False)
        self._gamma2 = Gamma(0.5 * self.df2, 0.5 * self.df2, validate_args=False)
        super().__init__(self.df1.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> FisherSnedecor:
        new = self._expanded(FisherSnedecor, batch_shape, _instance, "df1", "df2")
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self) -> Tensor:
        df2 = self.df2
        return (df2 / (df2 - 2)).masked_fill(df2 <= 2, float("nan"))

    @property
    def mode(self) -> Tensor:
        df1, df2 = self.df1, self.df2
        return ((df1 - 2) / df1 * df2 / (df2 + 2)).masked_fill(df1 <= 2, float("nan"))

    @property
    def variance(self) -> Tensor:
        df1, df2 = self.df1, self.df2
        var = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return var.masked_fill(df2 <= 4, float("nan"))

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        tiny = finfo(self.df1.dtype).tiny
        numerator = self._gamma1.rsample(sample_shape)
        denominator = self._gamma2.rsample(sample_shape).clamp(min=tiny)
        return (numerator / denominator).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        half1, half2 = 0.5 * self.df1, 0.5 * self.df2
        ratio = self.df1 / self.df2
        t1 = lgamma(half1 + half2) - lgamma(half1) - lgamma(half2)
        t2 = half1 * ratio.log() + (half1 - 1) * value.log()
        t3 = (half1 + half2) * (ratio * value).log1p()
        return t1 + t2 - t3
