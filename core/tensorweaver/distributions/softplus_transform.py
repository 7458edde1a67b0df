"""``SoftplusTransform``: ``y = log(1 + exp(x))``, the reals onto the positive reals."""

from __future__ import annotations

from tensorweaver.distributions import constraints
from tensorweaver.distributions.transforms import Transform
from tensorweaver.nn.functional import softplus
from tensorweaver.tensor import Tensor


class SoftplusTransform(Transform):
    codomain = constraints.positive
    sign = 1

    def _call(self, x: Tensor) -> Tensor:
        return softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return (-(-y).expm1()).log() + y  # log(exp(y) - 1), finite for large y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftplusTransform)
