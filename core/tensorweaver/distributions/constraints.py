"""``tw.distributions.constraints``: the sets a distribution's parameters and samples live in.

A constraint's ``check(value)`` is a bool tensor, True where ``value`` is in the set (reduced
over the constraint's ``event_dim`` rightmost dimensions); ``is_discrete`` and ``event_dim``
are PyTorch's. Distributions check their arguments and, with ``validate_args``, the values
handed to ``log_prob`` against these.
"""

from __future__ import annotations

from typing import Any, Callable

from tensorweaver import linalg
from tensorweaver.contract.dtypes import bool_
from tensorweaver.dtype_info import finfo
from tensorweaver.ops.creation import full
from tensorweaver.ops.movement import cat as _cat
from tensorweaver.ops.movement import stack as _stack
from tensorweaver.ops.numeric import isclose
from tensorweaver.tensor import Tensor

__all__ = [
    "Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property",
    "greater_than", "greater_than_eq", "half_open_interval", "independent", "integer_interval",
    "interval", "is_dependent", "less_than", "lower_cholesky", "lower_triangular",
    "MixtureSameFamilyConstraint", "multinomial",
    "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_definite",
    "positive_integer", "positive_semidefinite", "real", "real_vector", "simplex", "square",
    "stack", "symmetric", "unit_interval",
]  # fmt: skip


class Constraint:
    """A region of values; ``check`` says which elements of a tensor lie in it."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


def _reduce(ok: Tensor, event_dim: int) -> Tensor:
    return ok.reshape(ok.shape[: ok.ndim - event_dim] + (-1,)).all(-1) if event_dim else ok


class _Dependent(Constraint):
    """A placeholder for a value whose support depends on other values: never checked."""

    def __init__(self, *, is_discrete: bool = False, event_dim: int = 0) -> None:
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, *, is_discrete: Any = None, event_dim: Any = None) -> _Dependent:
        """A copy with the given static attributes: ``dependent(is_discrete=True)``."""
        return _Dependent(
            is_discrete=self.is_discrete if is_discrete is None else is_discrete,
            event_dim=self.event_dim if event_dim is None else event_dim,
        )

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


class _DependentProperty(property, _Dependent):
    """A ``property`` on instances that reads as a dependent constraint on the class
    (a support computed from the parameters)."""

    def __init__(
        self,
        fn: Callable[[Any], Any] | None = None,
        *,
        is_discrete: bool = False,
        event_dim: int = 0,
    ) -> None:
        property.__init__(self, fn)
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, fn: Callable[[Any], Any]) -> _DependentProperty:  # type: ignore[override]
        return _DependentProperty(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


def is_dependent(constraint: Any) -> bool:
    return isinstance(constraint, _Dependent)


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # False only for NaN


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: int) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _GreaterThan(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={_number(self.lower_bound)})"


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return self.lower_bound <= value

    def __repr__(self) -> str:
        return f"GreaterThanEq(lower_bound={_number(self.lower_bound)})"


class _LessThan(Constraint):
    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={_number(self.upper_bound)})"


class _Interval(Constraint):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return (
            f"Interval(lower_bound={_number(self.lower_bound)}, "
            f"upper_bound={_number(self.upper_bound)})"
        )


class _HalfOpenInterval(_Interval):
    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self) -> str:
        return "HalfOpen" + super().__repr__()


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return (value.tril() == value).reshape(value.shape[:-2] + (-1,)).all(-1)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        lower = (value.tril() == value).reshape(value.shape[:-2] + (-1,)).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _CorrCholesky(Constraint):
    """Lower Cholesky factors whose rows have unit length (of correlation matrices)."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        tol = finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = value.detach().pow(2).sum(-1).sqrt()
        unit_rows = ((row_norm - 1.0).abs() <= tol).all(-1)
        return lower_cholesky.check(value) & unit_rows


class _Multinomial(Constraint):
    """Nonnegative vectors summing to at most ``upper_bound`` (PyTorch's weaker check)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & (value.sum(-1) <= self.upper_bound)


class _Square(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        is_square = value.shape[-2] == value.shape[-1]
        return full(tuple(value.shape[:-2]), is_square, dtype=bool_, device=value.device)


class _Symmetric(_Square):
    def check(self, value: Tensor) -> Tensor:
        square = super().check(value)
        if not square.all().item():
            return square
        return isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        symmetric = super().check(value)
        if not symmetric.all().item():
            return symmetric
        return (linalg.eigvalsh(value) >= 0).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        symmetric = super().check(value)
        if not symmetric.all().item():
            return symmetric
        return linalg.cholesky_ex(value).info == 0


class _Independent(Constraint):
    """``base_constraint`` reinterpreting ``reinterpreted_batch_ndims`` batch dims as event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        return _reduce(self.base_constraint.check(value), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Cat(Constraint):
    """Consecutive blocks of ``lengths`` (1 each by default) along ``dim``, each in its own
    constraint of ``cseq`` (as ``cat`` joins them)."""

    def __init__(self, cseq: list, dim: int = 0, lengths: list | None = None) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise AssertionError(
                f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})"
            )
        self.dim = dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        _check_dim(self.dim, value)
        checks, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            checks.append(constraint.check(value.narrow(self.dim, start, length)))
            start += length
        return _cat(checks, self.dim)


class _Stack(Constraint):
    """Each slice along ``dim`` in its own constraint of ``cseq`` (as ``stack`` joins them)."""

    def __init__(self, cseq: list, dim: int = 0) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq, self.dim = list(cseq), dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        event_dim = max(c.event_dim for c in self.cseq)
        # stacking along a dimension counted into the event makes it one dimension deeper
        return event_dim + 1 if self.dim + event_dim < 0 else event_dim

    def check(self, value: Tensor) -> Tensor:
        _check_dim(self.dim, value)
        parts = value.unbind(self.dim)
        return _stack([c.check(part) for c, part in zip(self.cseq, parts)], self.dim)


class MixtureSameFamilyConstraint(Constraint):
    """A ``MixtureSameFamily``'s support: a value is in it when it is in every component's
    ``base_constraint`` (the components' dimension put back before the value's event)."""

    def __init__(self, base_constraint: Constraint) -> None:
        if not isinstance(base_constraint, Constraint):
            raise AssertionError(
                f"base_constraint must be a Constraint, got {type(base_constraint).__name__}"
            )
        self.base_constraint = base_constraint

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def check(self, value: Tensor) -> Tensor:
        ok = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        return _reduce(ok, 1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_constraint!r})"


def _check_dim(dim: int, value: Tensor) -> None:
    if not -value.ndim <= dim < value.ndim:
        raise AssertionError(f"dim {dim} out of range for value with {value.ndim} dimensions")


def _number(bound: Any) -> Any:
    return bound.item() if isinstance(bound, Tensor) and bound.numel() == 1 else bound


dependent = _Dependent()
dependent_property = _DependentProperty
real = _Real()
real_vector = _Independent(real, 1)
boolean = _Boolean()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
simplex = _Simplex()
one_hot = _OneHot()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
multinomial = _Multinomial
cat = _Cat
stack = _Stack
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval
independent = _Independent
