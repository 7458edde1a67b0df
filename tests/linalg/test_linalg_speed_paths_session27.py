"""The twenty-seventh session's linalg work, compared with torch 2.13: the matrix norms end
in PyTorch's chain of nodes, with the same values and gradients: the singular-value ones
('nuc', 2, -2) sum over a dim (``SumBackward1`` even where it is the only dim left) and with
``keepdim`` add the kept dim, one more and undo the permutation; 1, -1, inf and -inf take the
max or min of a vector norm; the largest of nothing (an empty matrix's 2, 1 or inf norm over
its empty side) is a zero outside the graph. Last, the core's names of a sum or prod given
a dim that covers every axis (found on the way)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from snippet_outcomes import same_each, walk

SPECS = ["numpy", "torch:cpu"]


def _matrix(m: Any, *shape: int) -> Any:
    x = np.random.default_rng(0).standard_normal(shape)
    return m.tensor(x, requires_grad=True)


def _norm(shape: tuple, ord: Any, dim: tuple, keepdim: bool) -> Any:  # noqa: A002
    """The norm's node chain, its value and the input's gradient (where it has one)."""

    def program(m: Any) -> Any:
        a = _matrix(m, *shape)
        value = m.linalg.matrix_norm(a, ord, dim=dim, keepdim=keepdim)
        chain = walk(value.grad_fn, 5)
        if value.requires_grad:
            (value * 1.5).sum().backward()
        return chain, value, value.requires_grad, a.grad

    return program


@pytest.mark.parametrize("spec", SPECS)
def test_nuclear_norm_grad_fn(spec: str) -> None:
    # (before: a 2-d input's nuclear norm ended in SumBackward0, torch's in SumBackward1)
    same_each({"nuclear_norm": _norm((3, 3), "nuc", (-2, -1), False)}, spec)


@pytest.mark.parametrize("spec", SPECS)
def test_singular_value_norms_chain(spec: str) -> None:
    # (before: keepdim ended in two UnsqueezeBackward0, torch's in PermuteBackward0)
    same_each(
        {
            f"{ord}_{dim}_{keepdim}": _norm(shape, ord, dim, keepdim)
            for ord in ("nuc", 2, -2)
            for shape, dim, keepdim in (
                ((3, 3), (-2, -1), True),
                ((2, 3, 4), (0, 2), False),
                ((2, 3, 4), (0, 2), True),
                ((2, 4, 3), (-1, -2), True),
            )
        },
        spec,
    )


@pytest.mark.parametrize("spec", SPECS)
def test_column_and_row_norms_chain(spec: str) -> None:
    # (before: abs, a sum, amax and a squeeze: SqueezeBackward2 without keepdim)
    same_each(
        {
            f"{ord}_{dim}_{keepdim}": _norm((2, 3, 4), ord, dim, keepdim)
            for ord in (1, -1, math.inf, -math.inf)
            for dim, keepdim in (((-2, -1), False), ((0, 2), False), ((2, 0), True))
        },
        spec,
    )


@pytest.mark.parametrize("spec", SPECS)
def test_largest_of_nothing(spec: str) -> None:
    # (before: a zero that required grad, from a sum over the empty dim)
    same_each(
        {
            f"{ord}_{shape}_{keepdim}": _norm(shape, ord, (-2, -1), keepdim)
            for ord in (2, 1, math.inf, "nuc")
            for shape in ((0, 3), (2, 3, 0))
            for keepdim in (False, True)
        },
        spec,
    )


def _reduction_names(m: Any) -> list:
    x, y = m.ones(3, requires_grad=True), m.ones(2, 3, requires_grad=True)
    made = (x.sum(-1), x.sum(0), y.sum((0, 1)), y.sum(), x.prod(0), x.prod())
    return [type(t.grad_fn).__name__ for t in made]


@pytest.mark.parametrize("spec", SPECS)
def test_reduction_over_every_given_dim_name(spec: str) -> None:
    same_each({"names": _reduction_names}, spec)
