"""diagonal (a stepped slice of the flattened matrices) and diag_embed (zeros put in by pad)
against PyTorch: offsets inside and past the matrix, every order of dim1/dim2 among the
dimensions, square and non-square, batched, empty and complex input, gradients (also by
finite differences and second order), and reads through strided views."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck, gradgradcheck
from tensor_reference import grads_like_torch, like_torch, raises_like_torch, uniform

#: batch of 2, then 3 x 5 matrices with a dimension of 4 between their rows and columns
HYPER = uniform((2, 3, 4, 5))
OFFSETS = [0, 1, -1, 3, -2, 5, -4, 9]


@pytest.mark.parametrize("offset", OFFSETS)
def test_diagonal_every_dimension_pair_like_torch(backend: str, offset: int) -> None:
    for dim1, dim2 in itertools.permutations(range(-4, 4), 2):
        if dim1 % 4 == dim2 % 4:
            continue
        like_torch(lambda m, t, a=dim1, b=dim2: m.diagonal(t, offset, a, b), HYPER)


@pytest.mark.parametrize("shape", [(4, 4), (3, 6), (6, 3), (2, 5, 5), (3, 2, 4, 1), (1, 1)])
@pytest.mark.parametrize("offset", [0, 1, -1, 2])
def test_diagonal_shapes_and_gradients_like_torch(backend: str, shape: tuple, offset: int) -> None:
    x = uniform(shape)
    like_torch(lambda m, t: t.diagonal(offset, -2, -1), x)
    like_torch(lambda m, t: m.diagonal(t, -offset, -1, -2), x, dtype="int64")
    grads_like_torch(lambda m, t: m.diagonal(t, offset, -2, -1), x)
    grads_like_torch(lambda m, t: m.diagonal(t, offset, -1, 0), x)


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 4), (2, 4, 0), (0, 0), (3, 3, 0, 2)])
def test_diagonal_of_empty_like_torch(backend: str, shape: tuple) -> None:
    x = np.zeros(shape)
    for offset in (0, 1, -1):
        like_torch(lambda m, t, k=offset: m.diagonal(t, k, 0, 1), x)
        like_torch(lambda m, t, k=offset: m.diagonal(t, k, -1, -2), x)
        grads_like_torch(lambda m, t, k=offset: m.diagonal(t, k, -1, 0), x)


@pytest.mark.cunumeric
def test_diagonal_of_strided_views_like_torch(backend: str) -> None:
    x = uniform((4, 6, 6))
    like_torch(lambda m, t: m.diagonal(t[:, ::2, 1:].mT, 1, -2, -1), x)
    like_torch(lambda m, t: m.diagonal(t.permute(2, 0, 1)[::3], -1, 0, 2), x)
    like_torch(lambda m, t: m.diagonal(t.expand(2, 4, 6, 6), 0, 1, 3), x)


def test_diagonal_of_complex_and_bool_like_torch(backend: str) -> None:
    z = uniform((2, 3, 4)) + 1j * uniform((2, 3, 4), seed=1)
    like_torch(lambda m, t: m.diagonal(t, 1, 1, 2), z)
    like_torch(lambda m, t: m.diagonal(t, -1, 2, 0), z > 0)


def test_diagonal_gradients_by_finite_differences(backend: str) -> None:
    for offset, dim1, dim2 in ((0, 0, 1), (2, -1, 1), (-1, 2, 0), (1, 3, 1)):
        gradcheck(lambda t, k=offset, a=dim1, b=dim2: tw.diagonal(t, k, a, b) ** 2, HYPER)
    gradgradcheck(lambda t: tw.diagonal(t, 1, 1, 3) ** 3, HYPER)


def test_trace_and_diag_stay_copies_like_torch(backend: str) -> None:
    x = uniform((4, 5))
    like_torch(lambda m, t: m.trace(t), x)
    grads_like_torch(lambda m, t: m.diag(t, -1) * 3, x)

    def write(m, t):  # noqa: ANN001, ANN202
        t = t.clone()
        m.diag(t, 1).fill_(5)  # diag's result is no view
        t.diagonal(-1).zero_()  # diagonal's is
        return t

    like_torch(write, x)


@pytest.mark.parametrize("offset", [0, 2, -1, -3])
@pytest.mark.parametrize(("dim1", "dim2"), [(-2, -1), (-1, -2), (0, 2), (2, 0), (1, -1)])
def test_diag_embed_like_torch(backend: str, offset: int, dim1: int, dim2: int) -> None:
    x = uniform((2, 3))
    like_torch(lambda m, t: m.diag_embed(t, offset, dim1, dim2), x)
    like_torch(lambda m, t: m.diag_embed(t, offset, dim1, dim2), x > 0)
    grads_like_torch(lambda m, t: m.diag_embed(t, offset, dim1, dim2), x)


def test_diag_embed_edges_like_torch(backend: str) -> None:
    like_torch(lambda m, t: m.diag_embed(t, 2), np.zeros((3, 0)))
    like_torch(lambda m, t: m.diag_embed(t, -1), np.zeros((0, 2)))
    like_torch(lambda m, t: m.diag_embed(t), uniform((1,)))
    gradcheck(lambda t: tw.diag_embed(t, 1, 0, 2) ** 2, uniform((3, 2)))
    gradgradcheck(lambda t: tw.diag_embed(t, -2) ** 3, uniform((2, 3)))


def test_diagonal_errors_like_torch(backend: str) -> None:
    raises_like_torch(lambda m, t: m.diagonal(t, 0, 1, 1), HYPER, match=["diagonal"])
    raises_like_torch(lambda m, t: m.diagonal(t, 0, 0, 4), HYPER)
    raises_like_torch(lambda m, t: m.diagonal(t), uniform((3,)))
