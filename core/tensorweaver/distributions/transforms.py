"""``tw.distributions.transforms``: invertible maps with the log-determinant of their
Jacobian, for :class:`TransformedDistribution` (PyTorch's names and conventions: ``t(x)``,
``t.inv(y)``, ``t.log_abs_det_jacobian(x, y)``, ``domain``, ``codomain``, ``sign``)."""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.independent import sum_rightmost
from tensorweaver.distributions.params import broadcast_all, lazy_property
from tensorweaver.dtype_info import finfo
from tensorweaver.nn.functional import softplus
from tensorweaver.ops.creation import full_like, zeros_like
from tensorweaver.tensor import Tensor

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform", "Transform",
    "identity_transform",
]  # fmt: skip


class Transform:
    """An invertible map ``y = t(x)`` on tensors (elementwise unless ``event_dim`` says)."""

    bijective = True
    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real
    # cache_size=1 keeps the last (x, y) pair, so that t.inv(t(x)) is x itself
    _cache_size = 0
    _cached_x_y: tuple = (None, None)

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError(f"{type(self).__name__}: cache_size must be 0 or 1, got {cache_size}")
        self._cache_size = cache_size
        self._cached_x_y = (None, None)

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with ``cache_size`` (itself if it has that size already)."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self).__name__}.with_cache is not implemented")

    @property
    def sign(self) -> Any:
        """The sign of the Jacobian's determinant (bijective elementwise transforms only)."""
        raise NotImplementedError(f"{type(self).__name__} has no sign")

    @property
    def event_dim(self) -> int:
        # one number only where both ends agree: a shape-changing transform (Reshape,
        # CorrCholesky, a Compose over them) has two, read from domain and codomain
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        # one inverse per transform, so that t.inv.inv is t.inv's own inverse again
        inverse = self.__dict__.get("_inverse_transform")
        if inverse is None:
            inverse = self.__dict__["_inverse_transform"] = _Inverse(self)
        return inverse

    def __call__(self, x: Tensor) -> Tensor:
        if not self._cache_size:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        """The inverse at ``y``, from the cache when ``y`` is the last output."""
        if not self._cache_size:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

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

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _Inverse(Transform):
    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform
        self.domain, self.codomain = transform.codomain, transform.domain
        self.bijective = transform.bijective

    @property
    def sign(self) -> Any:
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Inverse) and self._inv == other._inv

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self._inv.with_cache(cache_size).inv

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def __repr__(self) -> str:
        return f"_InverseTransform({self._inv!r})"


class ExpTransform(Transform):
    codomain = constraints.positive
    sign = 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class PowerTransform(Transform):
    domain = constraints.positive
    codomain = constraints.positive

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @lazy_property
    def sign(self) -> Tensor:  # type: ignore[override]
        return self.exponent.sign()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and bool(
            (self.exponent == other.exponent).all().item()
        )

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()


class SigmoidTransform(Transform):
    codomain = constraints.unit_interval
    sign = 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SigmoidTransform)

    def _call(self, x: Tensor) -> Tensor:
        info = finfo(x.dtype)
        return x.sigmoid().clamp(min=info.tiny, max=1.0 - info.eps)

    def _inverse(self, y: Tensor) -> Tensor:
        info = finfo(y.dtype)
        y = y.clamp(min=info.tiny, max=1.0 - info.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    codomain = constraints.interval(-1.0, 1.0)
    sign = 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TanhTransform)

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return 0.5 * ((1 + y).log() - (1 - y).log())

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # log(1 - tanh(x)^2), written to stay accurate for large |x|
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AffineTransform(Transform):
    """``y = loc + scale * x`` (over ``event_dim`` rightmost dimensions for the Jacobian)."""

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim
        # plain real when elementwise, as PyTorch (its repr is Real())
        real = constraints.real
        self.domain = self.codomain = (
            constraints.independent(real, event_dim) if event_dim else real
        )

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def sign(self) -> Any:  # type: ignore[override]
        if isinstance(self.scale, Tensor):
            return self.scale.sign()
        return 1 if self.scale > 0 else -1 if self.scale < 0 else 0

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, AffineTransform)
            and _all_equal(self.loc, other.loc)
            and _all_equal(self.scale, other.scale)
        )

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if isinstance(self.scale, Tensor):
            result = self.scale.abs().log().expand(x.shape)
        else:
            result = full_like(x, math.log(abs(self.scale)))  # x * 0 is NaN at x = inf
        return sum_rightmost(result, self._event_dim)


class SoftmaxTransform(Transform):
    """Real vectors to the simplex (not bijective: no Jacobian, as in PyTorch)."""

    bijective = False
    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SoftmaxTransform)

    def _call(self, x: Tensor) -> Tensor:
        shifted = (x - x.amax(-1, keepdim=True)).exp()
        return shifted / shifted.sum(-1, keepdim=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()


class ComposeTransform(Transform):
    """``parts`` applied in order."""

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.parts = [p.with_cache(cache_size) for p in parts] if cache_size else list(parts)
        self.bijective = all(p.bijective for p in self.parts)
        if self.parts:
            self.domain = _widened(self.parts[0].domain, self._event_dim(self.parts[::-1], True))
            self.codomain = _widened(self.parts[-1].codomain, self._event_dim(self.parts, False))

    @staticmethod
    def _event_dim(parts: list[Transform], inverse: bool) -> int:
        """The event dimensions at the far end of ``parts`` (walked from their near end):
        each part may add or remove dimensions, and needs at least its own."""
        near, far = ("codomain", "domain") if inverse else ("domain", "codomain")
        event_dim = getattr(parts[0], near).event_dim
        for part in parts:
            event_dim += getattr(part, far).event_dim - getattr(part, near).event_dim
            event_dim = max(event_dim, getattr(part, far).event_dim)
        return event_dim

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    @property
    def sign(self) -> Any:  # type: ignore[override]
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def forward_shape(self, shape: tuple) -> tuple:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: tuple) -> tuple:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"

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
            return zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total: Any = 0
        # the event dims change along the parts (a reshape, a Cholesky factor): each part's
        # term is summed over the event dims it does not cover at its own input
        event_dim = self.domain.event_dim
        for part, x_part, y_part in zip(self.parts, xs[:-1], xs[1:]):
            term = part.log_abs_det_jacobian(x_part, y_part)
            total = total + sum_rightmost(term, event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total


def _widened(constraint: constraints.Constraint, event_dim: int) -> constraints.Constraint:
    """``constraint`` over ``event_dim`` rightmost dimensions (at least its own)."""
    extra = event_dim - constraint.event_dim
    return constraints.independent(constraint, extra) if extra > 0 else constraint


identity_transform = ComposeTransform([])


def _all_equal(a: Any, b: Any) -> bool:
    """PyTorch's comparison of two parameters: numbers by value, else elementwise, all."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return bool((a == b).all().item())
    return a == b


# The transforms defined next to what they serve, under PyTorch's module name too; imported
# last because those modules build on the classes above.
from tensorweaver.distributions.cdf_transform import CumulativeDistributionTransform  # noqa: E402
from tensorweaver.distributions.cholesky_transforms import (  # noqa: E402
    CorrCholeskyTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
)
from tensorweaver.distributions.half import AbsTransform  # noqa: E402
from tensorweaver.distributions.independent_transform import IndependentTransform  # noqa: E402
from tensorweaver.distributions.logistic_normal import StickBreakingTransform  # noqa: E402
from tensorweaver.distributions.part_transforms import CatTransform, StackTransform  # noqa: E402
from tensorweaver.distributions.reshape_transform import ReshapeTransform  # noqa: E402
from tensorweaver.distributions.softplus_transform import SoftplusTransform  # noqa: E402
