"""``event_dim`` of transforms built on shape-changing parts (ReshapeTransform,
CorrCholeskyTransform) as torch 2.13 gives it: one number where domain and codomain agree,
ValueError where they differ, for the parts themselves and the Compose, Cat, Stack and
Independent transforms over them; and the log-determinants and TransformedDistributions
built on them."""

from __future__ import annotations

import math
from typing import Any

import pytest
from snippet_outcomes import same_each
from tw_backends import FAST


def _event_dim(build: Any) -> Any:
    return lambda m: build(m.distributions.transforms).event_dim


def _log_det(build: Any, *shape: int) -> Any:
    def program(m: Any) -> Any:
        transform = build(m.distributions.transforms)
        x = m.linspace(-0.5, 0.5, math.prod(shape), dtype=m.float64).reshape(shape)
        return transform.log_abs_det_jacobian(x, transform(x))

    return program


def _reshapes(T: Any, there: tuple, back: tuple) -> Any:
    return T.ComposeTransform([T.ReshapeTransform(there, back), T.ReshapeTransform(back, there)])


EVENT_DIMS = {
    "corr-cholesky-inverse": _event_dim(lambda T: T.CorrCholeskyTransform().inv),
    "reshape-same-rank": _event_dim(lambda T: T.ReshapeTransform((2, 3), (3, 2))),
    "compose-reshape-then-exp": _event_dim(
        lambda T: T.ComposeTransform([T.ReshapeTransform((2, 3), (6,)), T.ExpTransform()])
    ),
    "compose-corr-cholesky-then-affine": _event_dim(
        lambda T: T.ComposeTransform([T.CorrCholeskyTransform(), T.AffineTransform(0.0, 2.0)])
    ),
    # (was 2, the largest part's: torch reads the Compose's own domain and codomain, 1 each)
    "compose-unflatten-then-flatten": _event_dim(lambda T: _reshapes(T, (6,), (2, 3))),
    "compose-flatten-then-unflatten": _event_dim(lambda T: _reshapes(T, (2, 3), (6,))),
    "compose-empty": _event_dim(lambda T: T.ComposeTransform([])),
    "cat-with-corr-cholesky": _event_dim(
        lambda T: T.CatTransform([T.ExpTransform(), T.CorrCholeskyTransform()], 0, [1, 1])
    ),
    "cat-with-round-trip-reshape": _event_dim(
        lambda T: T.CatTransform([T.ExpTransform(), _reshapes(T, (2, 3), (6,))], 0, [1, 1])
    ),
    # (was the domain's event_dim where the stacked codomain has another)
    "stack-with-reshape": _event_dim(
        lambda T: T.StackTransform([T.ExpTransform(), T.ReshapeTransform((2, 3), (6,))], 0)
    ),
    "stack-with-corr-cholesky": _event_dim(
        lambda T: T.StackTransform([T.ExpTransform(), T.CorrCholeskyTransform()], 0)
    ),
    "stack-with-affine-event": _event_dim(
        lambda T: T.StackTransform([T.ExpTransform(), T.AffineTransform(0.0, 2.0, 1)], -1)
    ),
    "independent-corr-cholesky": _event_dim(
        lambda T: T.IndependentTransform(T.CorrCholeskyTransform(), 1)
    ),
    "independent-reshape": _event_dim(
        lambda T: T.IndependentTransform(T.ReshapeTransform((2, 3), (6,)), 1)
    ),
    "independent-round-trip-reshape": _event_dim(
        lambda T: T.IndependentTransform(_reshapes(T, (2, 3), (6,)), 1)
    ),
}


@pytest.mark.parametrize("spec", FAST)
def test_event_dims_over_shape_changing_parts_as_torch(spec: str) -> None:
    same_each(EVENT_DIMS, spec)


def _transformed(parts: Any, base_shape: tuple, reinterpreted: int) -> Any:
    def program(m: Any) -> Any:
        D = m.distributions
        loc = m.zeros(base_shape, dtype=m.float64)
        base = D.Independent(D.Normal(loc, loc + 1.0), reinterpreted)
        dist = D.TransformedDistribution(base, parts(D.transforms))
        x = m.linspace(-0.5, 0.5, loc.numel(), dtype=m.float64).reshape(base_shape)
        value = D.transforms.ComposeTransform(dist.transforms)(x)
        return dist.event_shape, dist.batch_shape, dist.log_prob(value)

    return program


LOG_DETS = {
    "compose-reshape-then-exp": _log_det(
        lambda T: T.ComposeTransform([T.ReshapeTransform((2, 3), (6,)), T.ExpTransform()]), 4, 2, 3
    ),
    "compose-round-trip-reshape-then-exp": _log_det(
        lambda T: T.ComposeTransform([_reshapes(T, (6,), (2, 3)), T.ExpTransform()]), 2, 6
    ),
    "cat-with-round-trip-reshape": _log_det(
        lambda T: T.CatTransform(
            [T.ExpTransform(), T.ComposeTransform([_reshapes(T, (3,), (3,)), T.ExpTransform()])],
            -1,
            [2, 3],
        ),
        2,
        5,
    ),
    "stack-exp-affine": _log_det(
        lambda T: T.StackTransform([T.ExpTransform(), T.AffineTransform(0.0, 2.0)], 0), 2, 3
    ),
    "transformed-reshape-then-exp": _transformed(
        lambda T: [T.ReshapeTransform((2, 3), (6,)), T.ExpTransform()], (4, 2, 3), 2
    ),
    "transformed-corr-cholesky-then-affine": _transformed(
        lambda T: [T.CorrCholeskyTransform(), T.AffineTransform(0.0, 2.0)], (4, 3), 1
    ),
}


@pytest.mark.parametrize("spec", FAST)
def test_log_dets_over_shape_changing_parts_as_torch(spec: str) -> None:
    same_each(LOG_DETS, spec, decimals=10)
