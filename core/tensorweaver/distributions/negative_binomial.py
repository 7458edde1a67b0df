"""``NegativeBinomial(total_count, probs=None, logits=None)``: the number of successes before
``total_count`` failures of Bernoulli(probs) trials, drawn as a gamma-Poisson mixture."""

from __future__ import annotations

from typing import Any

from tensorweaver.autograd.mode import no_grad
from tensorweaver.distributions import constraints
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.gamma import Gamma
from tensorweaver.distributions.gamma_draws import poisson
from tensorweaver.distributions.probs_or_logits import SuccessProbability
from tensorweaver.nn.functional import logsigmoid
from tensorweaver.ops.special import lgamma
from tensorweaver.tensor import Size, Tensor


class NegativeBinomial(SuccessProbability, Distribution):
    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(
        self,
        total_count: Any,
        probs: Any = None,
        logits: Any = None,
        validate_args: bool | None = None,
    ) -> None:
        (total_count,) = self._given("NegativeBinomial", probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> NegativeBinomial:
        return self._expanded_given(NegativeBinomial, batch_shape, _instance, "total_count")

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        with no_grad():
            # total_count may be 0, outside Gamma's support: no argument checks
            gamma = Gamma(self.total_count, (-self.logits).exp(), validate_args=False)
            return poisson(gamma.sample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_unnormalized = n * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        log_normalization = -lgamma(n + value) + lgamma(1.0 + value) + lgamma(n)
        # n = 0 and value = 0 has probability 1, where lgamma(0) is infinite
        log_normalization = log_normalization.masked_fill(n + value == 0, 0.0)
        return log_unnormalized - log_normalization
