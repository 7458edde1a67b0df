"""``biject_to``/``transform_to`` and the transforms they build (IndependentTransform,
LowerCholeskyTransform, PositiveDefiniteTransform, StickBreakingTransform) against
``torch.distributions`` in float64: values, inverses, log-determinants, membership."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.distributions as D
import torch
import torch.distributions as td
from test_more_distributions import _close

RNG = np.random.default_rng(2)

# name -> (constraint from a constraints module, unconstrained input)
CONSTRAINTS: dict[str, tuple[Callable[[Any], Any], np.ndarray]] = {
    "real": (lambda c: c.real, RNG.normal(size=(2, 3))),
    "positive": (lambda c: c.positive, RNG.normal(size=(2, 3))),
    "greater_than": (lambda c: c.greater_than(1.5), RNG.normal(size=(2, 3))),
    "greater_than_eq": (lambda c: c.greater_than_eq(-0.5), RNG.normal(size=(2, 3))),
    "less_than": (lambda c: c.less_than(2.0), RNG.normal(size=(2, 3))),
    "unit_interval": (lambda c: c.unit_interval, RNG.normal(size=(2, 3))),
    "interval": (lambda c: c.interval(-1.0, 3.0), RNG.normal(size=(2, 3))),
    "half_open_interval": (lambda c: c.half_open_interval(0.0, 2.0), RNG.normal(size=(2, 3))),
    "simplex": (lambda c: c.simplex, RNG.normal(size=(2, 3))),
    "real_vector": (lambda c: c.real_vector, RNG.normal(size=(2, 3))),
    "independent_positive": (lambda c: c.independent(c.positive, 2), RNG.normal(size=(2, 3))),
}


def _module(m: Any) -> Any:
    return tw if m is D else torch


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_registries_map_onto_the_constraint_like_torch(
    backend: str, registry: str, name: str
) -> None:
    build, x = CONSTRAINTS[name]
    ours = getattr(D, registry)(build(D.constraints))
    theirs = getattr(td, registry)(build(td.constraints))
    x_ours, x_theirs = tw.tensor(x), torch.tensor(x)
    y_ours, y_theirs = ours(x_ours), theirs(x_theirs)
    _close(y_ours, y_theirs)
    assert bool(build(D.constraints).check(y_ours).all())
    if registry == "biject_to" or name != "simplex":
        _close(ours.inv(y_ours), theirs.inv(y_theirs))
        jacobian = ours.log_abs_det_jacobian(x_ours, y_ours)
        _close(jacobian, theirs.log_abs_det_jacobian(x_theirs, y_theirs))


@pytest.mark.parametrize("name", ["LowerCholeskyTransform", "PositiveDefiniteTransform"])
def test_matrix_transforms_like_torch(backend: str, name: str) -> None:
    x = RNG.normal(size=(2, 3, 3))
    ours, theirs = getattr(D, name)(), getattr(td, name)()
    y_ours, y_theirs = ours(tw.tensor(x)), theirs(torch.tensor(x))
    _close(y_ours, y_theirs)
    assert bool(ours.codomain.check(y_ours).all())
    _close(ours.inv(y_ours), theirs.inv(y_theirs))
    assert D.transform_to(D.constraints.lower_cholesky) == D.LowerCholeskyTransform()


def test_unregistered_constraints_raise_like_torch() -> None:
    with pytest.raises(NotImplementedError):
        td.biject_to(td.constraints.lower_cholesky)
    with pytest.raises(NotImplementedError, match="_LowerCholesky"):
        D.biject_to(D.constraints.lower_cholesky)
    with pytest.raises(TypeError):
        D.biject_to.register(3, lambda c: D.transforms.ExpTransform())


def test_an_unconstrained_parameter_optimized_through_transform_to(backend: str) -> None:
    """Fit a positive scale by descending on its unconstrained preimage, as VI code does."""
    to_positive = D.transform_to(D.constraints.positive)
    raw = tw.zeros((), requires_grad=True)
    data = tw.tensor(RNG.normal(0.0, 2.0, 500))
    opt = tw.optim.Adam([raw], lr=0.05)
    for _ in range(200):
        loss = -D.Normal(0.0, to_positive(raw)).log_prob(data).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    expected = float(np.sqrt((np.asarray(data) ** 2).mean()))  # the maximum-likelihood scale
    assert abs(to_positive(raw).item() - expected) < 1e-3


def test_corr_cholesky_transform_like_torch(backend: str) -> None:
    """LKJCholesky's support maps through CorrCholeskyTransform (as PyTorch's registries
    do): values, inverse, log-determinant and gradients."""
    x = RNG.normal(size=(2, 6))
    ours = D.biject_to(D.LKJCholesky(4).support)
    theirs = td.biject_to(td.constraints.corr_cholesky)
    # no __eq__ in PyTorch's CorrCholeskyTransform: compared by type
    assert type(ours) is type(D.transform_to(D.LKJCholesky(4).support)) is D.CorrCholeskyTransform
    x_ours = tw.tensor(x, requires_grad=True)
    x_theirs = torch.tensor(x, requires_grad=True)
    y_ours, y_theirs = ours(x_ours), theirs(x_theirs)
    _close(y_ours, y_theirs)
    assert bool(D.LKJCholesky(4).support.check(y_ours).all())
    _close(ours.inv(y_ours), x_theirs)
    logdet_ours = ours.log_abs_det_jacobian(x_ours, y_ours)
    logdet_theirs = theirs.log_abs_det_jacobian(x_theirs, y_theirs)
    _close(logdet_ours, logdet_theirs)
    (y_ours.sum() + logdet_ours.sum()).backward()
    (y_theirs.sum() + logdet_theirs.sum()).backward()
    _close(x_ours.grad, x_theirs.grad)
    assert ours.forward_shape((5, 6)) == (5, 4, 4)
    assert ours.inverse_shape((5, 4, 4)) == (5, 6)


# name -> (constructor of (module, its tensor function), input)
TRANSFORMS: dict[str, tuple[Callable[[Any, Any], Any], np.ndarray]] = {
    "SoftplusTransform": (lambda m, t: m.SoftplusTransform(), RNG.normal(size=(2, 3)) * 4),
    "ReshapeTransform": (
        lambda m, t: m.ReshapeTransform((2, 3), (3, 2)),
        RNG.normal(size=(4, 2, 3)),
    ),
    "CumulativeDistributionTransform": (
        lambda m, t: m.CumulativeDistributionTransform(
            m.Normal(t([0.5, -1.0, 0.0]), t([1.0, 2.0, 0.5]))
        ),
        RNG.normal(size=(2, 3)),
    ),
    "IndependentTransform": (
        lambda m, t: m.IndependentTransform(m.transforms.ExpTransform(), 1),
        RNG.normal(size=(2, 3)),
    ),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transforms_like_torch(backend: str, name: str) -> None:
    build, x = TRANSFORMS[name]
    ours = build(D, tw.tensor)
    theirs = build(td, lambda v: torch.tensor(v, dtype=torch.float64))
    x_ours = tw.tensor(x, requires_grad=True)
    x_theirs = torch.tensor(x, requires_grad=True)
    y_ours, y_theirs = ours(x_ours), theirs(x_theirs)
    _close(y_ours, y_theirs)
    _close(ours.inv(y_ours), theirs.inv(y_theirs))
    logdet_ours = ours.log_abs_det_jacobian(x_ours, y_ours)
    logdet_theirs = theirs.log_abs_det_jacobian(x_theirs, y_theirs)
    _close(logdet_ours, logdet_theirs)
    (y_ours.sum() + logdet_ours.sum()).backward()
    (y_theirs.sum() + logdet_theirs.sum()).backward()
    _close(x_ours.grad, x_theirs.grad)
    assert ours.forward_shape(tuple(x.shape)) == tuple(theirs.forward_shape(x.shape))
    assert ours.inverse_shape(tuple(y_ours.shape)) == tuple(theirs.inverse_shape(y_theirs.shape))


def test_reshape_transform_refuses_a_different_size_like_torch() -> None:
    with pytest.raises(ValueError):
        td.ReshapeTransform((2, 3), (4,))
    with pytest.raises(ValueError, match="different numbers of elements"):
        D.ReshapeTransform((2, 3), (4,))


PART_TRANSFORMS: dict[str, tuple[Callable[[Any], Any], np.ndarray]] = {
    "Cat_dim0": (
        lambda m: m.CatTransform(
            [m.transforms.ExpTransform(), m.transforms.AffineTransform(1.0, 2.0)], 0, [1, 2]
        ),
        RNG.normal(size=(3, 4)),
    ),
    "Cat_last": (
        lambda m: m.CatTransform(
            [m.transforms.ExpTransform(), m.transforms.TanhTransform()], -1, [2, 3]
        ),
        RNG.normal(size=(4, 5)),
    ),
    "Cat_within_the_event": (  # log-determinants summed over the parts
        lambda m: m.CatTransform(
            [
                m.IndependentTransform(m.transforms.ExpTransform(), 1),
                m.IndependentTransform(m.transforms.SigmoidTransform(), 1),
            ],
            -1,
            [2, 3],
        ),
        RNG.normal(size=(4, 5)),
    ),
    "Stack_dim1": (
        lambda m: m.StackTransform([m.transforms.ExpTransform(), m.SoftplusTransform()], 1),
        RNG.normal(size=(3, 2)),
    ),
    "Stack_last": (
        lambda m: m.StackTransform(
            [m.transforms.TanhTransform(), m.transforms.SigmoidTransform()], -1
        ),
        RNG.normal(size=(3, 2)),
    ),
}


@pytest.mark.parametrize("name", sorted(PART_TRANSFORMS))
def test_cat_and_stack_transforms_like_torch(backend: str, name: str) -> None:
    build, x = PART_TRANSFORMS[name]
    ours, theirs = build(D), build(td)
    assert ours.event_dim == theirs.event_dim
    x_ours = tw.tensor(x, requires_grad=True)
    x_theirs = torch.tensor(x, requires_grad=True)
    y_ours, y_theirs = ours(x_ours), theirs(x_theirs)
    _close(y_ours, y_theirs)
    _close(ours.codomain.check(y_ours), theirs.codomain.check(y_theirs))
    _close(ours.inv(y_ours), theirs.inv(y_theirs))
    logdet_ours = ours.log_abs_det_jacobian(x_ours, y_ours)
    logdet_theirs = theirs.log_abs_det_jacobian(x_theirs, y_theirs)
    _close(logdet_ours, logdet_theirs)
    (y_ours.sum() + logdet_ours.sum()).backward()
    (y_theirs.sum() + logdet_theirs.sum()).backward()
    _close(x_ours.grad, x_theirs.grad)
