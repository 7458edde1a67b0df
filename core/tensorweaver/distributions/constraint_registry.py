"""``biject_to(constraint)`` and ``transform_to(constraint)``: a transform from unconstrained
reals onto a constraint's set, bijective for ``biject_to`` (PyTorch's registries; optimize
unconstrained parameters and map them onto the support)."""

from __future__ import annotations

import numbers
from typing import Any, Callable

from tensorweaver.distributions import constraints
from tensorweaver.distributions.cholesky_transforms import (
    CorrCholeskyTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
)
from tensorweaver.distributions.independent_transform import IndependentTransform
from tensorweaver.distributions.logistic_normal import StickBreakingTransform
from tensorweaver.distributions.part_transforms import CatTransform, StackTransform
from tensorweaver.distributions.transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    SigmoidTransform,
    SoftmaxTransform,
    Transform,
    identity_transform,
)

Factory = Callable[[Any], Transform]


class ConstraintRegistry:
    """Transform factories by constraint type (a singleton constraint stands for its type)."""

    def __init__(self) -> None:
        self._registry: dict[type, Factory] = {}

    def register(self, constraint: Any, factory: Factory | None = None) -> Any:
        if factory is None:  # used as a decorator
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, constraints.Constraint)):
            raise TypeError(
                "Expected constraint to be either a Constraint subclass or instance, but got "
                f"{constraint}"
            )
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> Transform:
        factory = self._registry.get(type(constraint))
        if factory is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(constraint: Any) -> Callable[[Factory], Factory]:
    def decorator(factory: Factory) -> Factory:
        biject_to.register(constraint, factory)
        transform_to.register(constraint, factory)
        return factory

    return decorator


@_both(constraints.real)
def _to_real(constraint: Any) -> Transform:
    return identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint: Any) -> Transform:
    base = biject_to(constraint.base_constraint)
    return IndependentTransform(base, constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint: Any) -> Transform:
    base = transform_to(constraint.base_constraint)
    return IndependentTransform(base, constraint.reinterpreted_batch_ndims)


@_both(constraints.greater_than)
@_both(constraints.greater_than_eq)
def _to_greater_than(constraint: Any) -> Transform:
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.lower_bound, 1)])


@_both(constraints.less_than)
def _to_less_than(constraint: Any) -> Transform:
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.upper_bound, -1)])


@_both(constraints.interval)
@_both(constraints.half_open_interval)
def _to_interval(constraint: Any) -> Transform:
    low, high = constraint.lower_bound, constraint.upper_bound
    numbers_given = isinstance(low, numbers.Number) and isinstance(high, numbers.Number)
    if numbers_given and low == 0 and high == 1:
        return SigmoidTransform()
    return ComposeTransform([SigmoidTransform(), AffineTransform(low, high - low)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint: Any) -> Transform:
    return StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint: Any) -> Transform:
    return SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint: Any) -> Transform:
    return LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
def _transform_to_positive_definite(constraint: Any) -> Transform:
    return PositiveDefiniteTransform()


@_both(constraints.corr_cholesky)
def _to_corr_cholesky(constraint: Any) -> Transform:
    return CorrCholeskyTransform()


# A concatenation or stack of constraints: each part's own transform, on its part
@biject_to.register(constraints.cat)
def _biject_to_cat(constraint: Any) -> Transform:
    parts = [biject_to(c) for c in constraint.cseq]
    return CatTransform(parts, constraint.dim, constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint: Any) -> Transform:
    parts = [transform_to(c) for c in constraint.cseq]
    return CatTransform(parts, constraint.dim, constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint: Any) -> Transform:
    return StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint: Any) -> Transform:
    return StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)
