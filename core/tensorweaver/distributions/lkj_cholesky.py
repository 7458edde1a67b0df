"""``LKJCholesky(dim, concentration=1.0)``: Cholesky factors of random correlation matrices,
whose density is proportional to ``det(C) ** (concentration - 1)``, drawn by the onion
method (a Beta draw per row sets the length of its off-diagonal part)."""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.autograd.mode import no_grad
from tensorweaver.distributions import constraints
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.gamma import Beta
from tensorweaver.distributions.params import broadcast_all
from tensorweaver.dtype_info import finfo
from tensorweaver.ops.creation import arange, randn, zeros
from tensorweaver.ops.movement import cat
from tensorweaver.ops.special import lgamma, multigammaln
from tensorweaver.tensor import Size, Tensor


class LKJCholesky(Distribution):
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Any = 1.0, validate_args: bool | None = None):
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}."
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        marginal = self.concentration + 0.5 * (dim - 2)
        steps = arange(dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = cat([zeros(1, dtype=steps.dtype, device=steps.device), steps])
        # row i's squared off-diagonal length is Beta(i / 2, marginal - (i - 1) / 2)
        self._beta = Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.shape, Size((dim, dim)), validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> LKJCholesky:
        new = self._expanded(LKJCholesky, batch_shape, _instance, "concentration")
        new.dim = self.dim
        new._beta = self._beta.expand(Size(batch_shape) + (self.dim,))
        return new

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            normal = randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            norm = normal.pow(2).sum(-1, keepdim=True).sqrt()
            # row 0 has no off-diagonal part: 0 / 1 there instead of 0 / 0
            direction = normal / norm.where(norm > 0, norm * 0 + 1)
            w = y.sqrt() * direction
            diagonal = (1 - w.pow(2).sum(-1)).clamp(min=finfo(w.dtype).tiny).sqrt()
            return w + diagonal.diag_embed(dim1=-2, dim2=-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diagonal = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = arange(2, self.dim + 1, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diagonal.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalizer = 0.5 * dm1 * math.log(math.pi) + multigammaln(alpha - 0.5, dm1)
        return unnormalized - (normalizer - lgamma(alpha) * dm1)
