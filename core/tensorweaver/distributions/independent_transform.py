"""``IndependentTransform(base_transform, reinterpreted_batch_ndims)``: a transform whose
Jacobian is summed over that many more rightmost dimensions (the transform counterpart of
:class:`~tensorweaver.distributions.Independent`)."""

from __future__ import annotations

from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.independent import sum_rightmost
from tensorweaver.distributions.transforms import Transform
from tensorweaver.tensor import Tensor


class IndependentTransform(Transform):
    def __init__(
        self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0
    ) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.domain = constraints.independent(base_transform.domain, reinterpreted_batch_ndims)
        self.codomain = constraints.independent(base_transform.codomain, reinterpreted_batch_ndims)
        self.bijective = base_transform.bijective

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(
            self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size
        )

    @property
    def sign(self) -> Any:
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        if x.ndim < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.ndim < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        result = self.base_transform.log_abs_det_jacobian(x, y)
        return sum_rightmost(result, self.reinterpreted_batch_ndims)

    def forward_shape(self, shape: tuple) -> tuple:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"
