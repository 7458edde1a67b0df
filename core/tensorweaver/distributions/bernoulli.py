"""``Bernoulli(probs=None, logits=None)``: 1 with probability ``probs``."""

from __future__ import annotations

from typing import Any

from tensorweaver.autograd.mode import no_grad
from tensorweaver.distributions import constraints
from tensorweaver.distributions.exponential_family import ExponentialFamily
from tensorweaver.distributions.params import broadcast_all
from tensorweaver.distributions.probs_or_logits import SuccessProbability
from tensorweaver.nn.functional import binary_cross_entropy_with_logits
from tensorweaver.ops.creation import arange
from tensorweaver.ops.sampling import bernoulli
from tensorweaver.ops.special import logit
from tensorweaver.tensor import Size, Tensor


class Bernoulli(SuccessProbability, ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (logit(self.probs),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.exp().log1p()

    def __init__(
        self, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        self._given("Bernoulli", probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Bernoulli:
        return self._expanded_given(Bernoulli, batch_shape, _instance)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return bernoulli(self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values
