"""``VonMises(loc, concentration)``: the circular normal on angles, drawn on the host from
TensorWeaver's default generator (its rejection sampler has no IR primitive)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorweaver.autograd.mode import no_grad
from tensorweaver.distributions import constraints
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.params import broadcast_all
from tensorweaver.ops.creation import as_tensor
from tensorweaver.ops.special import i0e, i1e
from tensorweaver.random import default_generator
from tensorweaver.tensor import Size, Tensor


class VonMises(Distribution):
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> VonMises:
        return self._expanded(VonMises, batch_shape, _instance, "loc", "concentration")

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        # log I0(k) = log(i0e(k)) + k: the scaled Bessel function stays finite for large k
        log_i0 = i0e(k).log() + k
        return k * (value - self.loc).cos() - math.log(2 * math.pi) - log_i0

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            loc = np.broadcast_to(np.asarray(self.loc, dtype=np.float64), shape)
            kappa = np.broadcast_to(np.asarray(self.concentration, dtype=np.float64), shape)
            angles = default_generator._rng.vonmises(loc, kappa)  # in [-pi, pi]
            return as_tensor(angles, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mean(self) -> Tensor:
        """The circular mean."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """The circular variance, 1 - I1(k) / I0(k)."""
        k = self.concentration
        return 1 - i1e(k) / i0e(k)
