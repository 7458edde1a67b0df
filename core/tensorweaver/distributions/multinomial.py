"""``Multinomial(total_count=1, probs=None, logits=None)``: the counts of each class among
``total_count`` Categorical draws."""

from __future__ import annotations

from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.categorical import Categorical
from tensorweaver.distributions.counts import Binomial
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.params import broadcast_all
from tensorweaver.nn.functional import one_hot
from tensorweaver.ops.creation import tensor
from tensorweaver.ops.special import lgamma
from tensorweaver.tensor import Size, Tensor


class Multinomial(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(
        self,
        total_count: int = 1,
        probs: Any = None,
        logits: Any = None,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        super().__init__(
            self._categorical.batch_shape,
            self._categorical.param_shape[-1:],
            validate_args=validate_args,
        )

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Multinomial:
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, Size(batch_shape), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.multinomial(self.total_count)

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        draws = self._categorical.sample(Size((self.total_count,)) + Size(tuple(sample_shape)))
        counts = one_hot(draws, self._categorical._num_events).sum(0)
        return counts.to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # a class of probability 0 drawn 0 times contributes 0, not 0 * -inf
        logits = logits.masked_fill((value == 0) & (logits == float("-inf")), 0.0)
        log_factorial_n = lgamma(value.sum(-1) + 1)
        log_factorial_xs = lgamma(value + 1).sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)

    def entropy(self) -> Tensor:
        n = tensor(float(self.total_count), dtype=self.probs.dtype, device=self.probs.device)
        binomial = Binomial(self.total_count, probs=self.probs)
        support = binomial.enumerate_support(expand=False)[1:]
        binomial_probs = binomial.log_prob(support).exp()
        term2 = (binomial_probs * lgamma(support + 1)).sum((0, -1))
        return n * self._categorical.entropy() - lgamma(n + 1) + term2
