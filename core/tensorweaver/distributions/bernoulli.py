"""``Bernoulli(probs=None, logits=None)``: 1 with probability ``probs``."""

from __future__ import annotations

from typing import Any

from tensorweaver.autograd.mode import no_grad
from tensorweaver.distributions import constraints
from tensorweaver.distributions.exponential_family import ExponentialFamily
from tensorweaver.distributions.params import (
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from tensorweaver.nn.functional import binary_cross_entropy_with_logits
from tensorweaver.ops.creation import arange
from tensorweaver.ops.sampling import bernoulli
from tensorweaver.ops.special import logit
from tensorweaver.tensor import Size, Tensor


def one_of(probs: Any, logits: Any, name: str) -> None:
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: either `probs` or `logits` must be specified, but not both.")


class Bernoulli(ExponentialFamily):
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
        one_of(probs, logits, "Bernoulli")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            param = self.logits
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Bernoulli:
        new = self._expanded(Bernoulli, batch_shape, _instance, "probs", "logits")
        new._param = new.__dict__.get("probs", new.__dict__.get("logits"))
        return new

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

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
