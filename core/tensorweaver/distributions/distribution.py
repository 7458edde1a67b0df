"""``Distribution``: what every distribution shares (PyTorch's base class).

Shapes: a distribution has a ``batch_shape`` (independent, differently parameterised copies)
and an ``event_shape`` (the shape of one draw); ``sample(sample_shape)`` returns
``sample_shape + batch_shape + event_shape``. Arguments are checked against
``arg_constraints`` and values handed to ``log_prob`` against ``support`` unless
``validate_args=False`` (or ``Distribution.set_default_validate_args(False)``), with
PyTorch's ``ValueError`` messages.
"""

from __future__ import annotations

import warnings
from typing import Any

from tensorweaver.autograd.mode import no_grad
from tensorweaver.distributions import constraints
from tensorweaver.distributions.params import lazy_property
from tensorweaver.ops.creation import full
from tensorweaver.tensor import Size, Tensor


class Distribution:
    """The base class: subclasses define ``arg_constraints``, ``support`` and what they can."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict[str, constraints.Constraint] = {}
    support: Any = None
    #: The default of ``validate_args``; an instance made without one follows it, as PyTorch's.
    _validate_args = True

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        if value not in (True, False):
            raise ValueError("set_default_validate_args: expected True or False")
        Distribution._validate_args = value

    def __init__(
        self,
        batch_shape: tuple = Size(),
        event_shape: tuple = Size(),
        validate_args: bool | None = None,
    ) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(
                    getattr(type(self), param, None), lazy_property
                ):
                    continue  # not computed yet: derived from a parameter checked on its own
                value = getattr(self, param)
                if constraint.check(value).all().item():
                    continue
                raise ValueError(
                    f"Expected parameter {param} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                    f"{constraint!r}, but found invalid values:\n{value}"
                )

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Distribution:
        raise NotImplementedError(f"{type(self).__name__} does not implement expand")

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        """A draw without gradient (``rsample`` under ``no_grad`` where there is one)."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        raise NotImplementedError(
            f"{type(self).__name__} has no reparameterized sample (has_rsample is False): "
            "use sample(), whose draws carry no gradient"
        )

    def sample_n(self, n: int) -> Tensor:
        warnings.warn(
            "`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
            FutureWarning,
            stacklevel=2,
        )
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement enumerate_support")

    def entropy(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def _extended_shape(self, sample_shape: tuple = Size()) -> Size:
        return Size(tuple(sample_shape)) + self._batch_shape + self._event_shape

    def _expanded(self, cls: type, batch_shape: tuple, _instance: Any, *names: str) -> Any:
        """A ``cls`` over ``batch_shape`` sharing this one's parameters ``names`` (those it
        holds: ``probs`` or ``logits``), broadcast without copies, as ``expand`` returns."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        for name in names:
            if name in self.__dict__:
                value = self.__dict__[name]
                if isinstance(value, Tensor):
                    value = value.expand(batch_shape + value.shape[len(self._batch_shape) :])
                new.__dict__[name] = value
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls: type, _instance: Any) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom "
                "__init__() must also define a custom .expand()."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def _validate_sample(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.ndim - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(
                f"The right-most size of value must match event_shape: {tuple(value.shape)} vs "
                f"{tuple(self._event_shape)}."
            )
        actual = value.shape
        expected = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    f"Value is not broadcastable with batch_shape+event_shape: {tuple(actual)} "
                    f"vs {tuple(expected)}."
                )
        support = self.support
        if support is None or support.check(value).all().item():
            return
        raise ValueError(
            f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to "
            f"be within the support ({support!r}) of the distribution {self!r}, but found "
            f"invalid values:\n{value}"
        )

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        shown = []
        for name in names:
            value = self.__dict__[name]
            # one element: formatted as PyTorch formats it (a 0-d tensor as its number, a
            # 1-element one as the tensor); more: its shape
            big = isinstance(value, Tensor) and value.numel() != 1
            shown.append(f"{name}: {value.shape if big else value}")
        return f"{type(self).__name__}({', '.join(shown)})"


def nan_like(shape: tuple, like: Tensor) -> Tensor:
    """A tensor of NaN with ``like``'s dtype and device (moments that do not exist)."""
    return full(tuple(shape), float("nan"), dtype=like.dtype, device=like.device)
