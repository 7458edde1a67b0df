"""``Geometric(probs=None, logits=None)``: the number of failures before the first success
of Bernoulli(probs) trials."""

from __future__ import annotations

from typing import Any

from tensorweaver.autograd.mode import no_grad
from tensorweaver.distributions import constraints
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.params import (
    broadcast_all,
)
from tensorweaver.distributions.probs_or_logits import BinaryProbs, one_of
from tensorweaver.dtype_info import finfo
from tensorweaver.nn.functional import binary_cross_entropy_with_logits
from tensorweaver.ops.creation import rand, zeros_like
from tensorweaver.tensor import Size, Tensor


class Geometric(BinaryProbs, Distribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(
        self, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        one_of(probs, logits, "Geometric")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            param = self.logits
        super().__init__(param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(
                f"Expected parameter probs ({type(self.probs).__name__} of shape "
                f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but found "
                f"invalid values:\n{self.probs[self.probs <= 0]}"
            )

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Geometric:
        return self._expanded(Geometric, batch_shape, _instance, "probs", "logits")

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            u = rand(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.clamp(min=finfo(u.dtype).tiny)  # (0, 1): log(u) stays finite
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # a sure success never fails: 0 * log(0) is 0 here, not NaN
        probs = probs.masked_fill((probs == 1) & (value == 0), 0.0)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        bce = binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
        return bce / self.probs
