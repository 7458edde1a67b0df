"""``ReshapeTransform(in_shape, out_shape)``: the rightmost ``in_shape`` dimensions read as
``out_shape`` (volume-preserving: zero log-determinant)."""

from __future__ import annotations

from tensorweaver.distributions import constraints
from tensorweaver.distributions.transforms import Transform
from tensorweaver.ops.creation import zeros
from tensorweaver.tensor import Size, Tensor


class ReshapeTransform(Transform):
    def __init__(self, in_shape: tuple, out_shape: tuple, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.in_shape, self.out_shape = Size(in_shape), Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        self.domain = constraints.independent(constraints.real, len(self.in_shape))
        self.codomain = constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        return x.reshape(x.shape[: x.ndim - len(self.in_shape)] + self.out_shape)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.reshape(y.shape[: y.ndim - len(self.out_shape)] + self.in_shape)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        batch = x.shape[: x.ndim - len(self.in_shape)]
        return zeros(tuple(batch), dtype=x.dtype, device=x.device)

    @staticmethod
    def _moved(shape: tuple, old: Size, new: Size) -> tuple:
        if len(shape) < len(old):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(old)
        if tuple(shape[cut:]) != tuple(old):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {old}")
        return tuple(shape[:cut]) + tuple(new)

    def forward_shape(self, shape: tuple) -> tuple:
        return self._moved(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return self._moved(shape, self.out_shape, self.in_shape)

    def __repr__(self) -> str:
        return f"ReshapeTransform({tuple(self.in_shape)}, {tuple(self.out_shape)})"
