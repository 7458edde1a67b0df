"""``tw.distributions.transforms``: invertible maps with the log-determinant of their
Jacobian, for :class:`TransformedDistribution` (PyTorch's names and conventions: ``t(x)``,
``t.inv(y)``, ``t.log_abs_det_jacobian(x, y)``, ``domain``, ``codomain``, ``sign``)."""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.independent import sum_rightmost
from tensorweaver.nn.functional import softplus
from tensorweaver.tensor import Tensor

__all__ = [
    "AffineTransform", "ComposeTransform", "ExpTransform", "PowerTransform",
    "SigmoidTransform", "SoftmaxTransform", "TanhTransform", "Transform", "identity_transform",
]  # fmt: skip


class Transform:
    """An invertible map ``y = t(x)`` on tensors (elementwise unless ``event_dim`` says)."""

    bijective = True
    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real
    sign: int = 1

    @property
    def event_dim(self) -> int:
        return self.domain.event_dim

    @property
    def inv(self) -> Transform:
        return _Inverse(self)

    def __call__(self, x: Tensor) -> Tensor:
        return self._call(x)

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError

    def forward_shape(self, shape: tuple) -> tuple:
        return shape

    def inverse_shape(self, shape: tuple) -> tuple:
        return shape

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _Inverse(Transform):
    def __init__(self, transform: Transform) -> None:
        self._inv = transform
        self.domain, self.codomain = transform.codomain, transform.domain
        self.sign = transform.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inverse(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)


class _Identity(Transform):
    def _call(self, x: Tensor) -> Tensor:
        return x

    def _inverse(self, y: Tensor) -> Tensor:
        return y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x * 0


identity_transform = _Identity()


class ExpTransform(Transform):
    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class PowerTransform(Transform):
    domain = constraints.positive
    codomain = constraints.positive

    def __init__(self, exponent: Any) -> None:
        self.exponent = exponent

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()


class SigmoidTransform(Transform):
    codomain = constraints.unit_interval

    def _call(self, x: Tensor) -> Tensor:
        return x.sigmoid()

    def _inverse(self, y: Tensor) -> Tensor:
        from tensorweaver.distributions.params import clamp_probs

        y = clamp_probs(y)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return 0.5 * ((1 + y).log() - (1 - y).log())

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # log(1 - tanh(x)^2), written to stay accurate for large |x|
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AffineTransform(Transform):
    """``y = loc + scale * x`` (over ``event_dim`` rightmost dimensions for the Jacobian)."""

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0) -> None:
        self.loc, self.scale, self._event_dim = loc, scale, event_dim
        self.domain = constraints.independent(constraints.real, event_dim)
        self.codomain = constraints.independent(constraints.real, event_dim)

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def sign(self) -> Any:  # type: ignore[override]
        if isinstance(self.scale, Tensor):
            return self.scale.sign()
        return 1 if self.scale > 0 else -1 if self.scale < 0 else 0

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if isinstance(self.scale, Tensor):
            result = self.scale.abs().log().expand(x.shape)
        else:
            result = x * 0 + math.log(abs(self.scale))
        return sum_rightmost(result, self._event_dim)


class SoftmaxTransform(Transform):
    """Real vectors to the simplex (not bijective: no Jacobian, as in PyTorch)."""

    bijective = False
    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x: Tensor) -> Tensor:
        shifted = (x - x.amax(-1, keepdim=True)).exp()
        return shifted / shifted.sum(-1, keepdim=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()


class ComposeTransform(Transform):
    """``parts`` applied in order."""

    def __init__(self, parts: list[Transform]) -> None:
        self.parts = list(parts)
        if self.parts:
            self.domain = self.parts[0].domain
            self.codomain = self.parts[-1].codomain

    @property
    def event_dim(self) -> int:
        return max((p.event_dim for p in self.parts), default=0)

    @property
    def sign(self) -> Any:  # type: ignore[override]
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    def _call(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y: Tensor) -> Tensor:
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return x * 0
        total: Any = 0
        event_dim = self.event_dim
        for part in self.parts:
            y_part = part(x)
            term = part.log_abs_det_jacobian(x, y_part)
            total = total + sum_rightmost(term, event_dim - part.event_dim)
            x = y_part
        return total
