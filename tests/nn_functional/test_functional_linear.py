"""linear and bilinear against torch.nn.functional in float64."""

from __future__ import annotations

import pytest
from functional_reference import check, randn


@pytest.mark.parametrize(
    ("x_shape", "w_shape"), [((4, 3), (5, 3)), ((2, 4, 3), (5, 3)), ((3,), (3,))]
)
@pytest.mark.parametrize("bias", [False, True])
def test_linear(backend: str, x_shape: tuple, w_shape: tuple, bias: bool) -> None:
    arrays = [randn(*x_shape), randn(*w_shape, seed=1)]
    if bias:
        arrays.append(randn(*w_shape[:-1], seed=2))
    check(lambda F, x, w, *b: F.linear(x, w, *b), *arrays)


@pytest.mark.parametrize("lead", [(4,), (2, 3)])
@pytest.mark.parametrize("bias", [False, True])
def test_bilinear(backend: str, lead: tuple, bias: bool) -> None:
    arrays = [randn(*lead, 3), randn(*lead, 2, seed=1), randn(5, 3, 2, seed=2)]
    if bias:
        arrays.append(randn(5, seed=3))
    check(lambda F, a, b, w, *bb: F.bilinear(a, b, w, *bb), *arrays)
