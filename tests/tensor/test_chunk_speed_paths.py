"""``chunk`` and ``split`` (one loop over the pieces) against PyTorch: pieces, their gradients
and grad_fn names, writes through a piece into its base, empty dimensions and the errors."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import assert_like_torch, grads_like_torch, like_torch, raises_like_torch

X = np.random.default_rng(0).standard_normal((5, 7, 6))

CUTS = [
    pytest.param(lambda t: t.chunk(4, -1), id="chunk-4-last"),
    pytest.param(lambda t: t.chunk(3, 1), id="chunk-3-uneven"),
    pytest.param(lambda t: t.chunk(9, 0), id="chunk-more-than-size"),
    pytest.param(lambda t: t.chunk(1, -2), id="chunk-1"),
    pytest.param(lambda t: t.split(2, -3), id="split-2-uneven"),
    pytest.param(lambda t: t.split(7, 1), id="split-whole"),
    pytest.param(lambda t: t.split(10, 2), id="split-larger-than-size"),
    pytest.param(lambda t: t.split([1, 0, 4, 2], -2), id="sections-with-empty"),
    pytest.param(lambda t: t.split((6,), -1), id="sections-one"),
]


@pytest.mark.cunumeric
@pytest.mark.parametrize("cut", CUTS)
def test_pieces_like_torch(backend: str, cut) -> None:
    like_torch(lambda m, t: cut(t), X)
    like_torch(lambda m, t: m.split(t, 3, -1) + m.chunk(t, 2, 0), X)


@pytest.mark.parametrize("cut", CUTS)
def test_piece_gradients_like_torch(backend: str, cut) -> None:
    # Each piece weighted differently, so a piece's gradient landing in the wrong place shows.
    def fn(m, t):
        pieces = cut(t * 1.0)
        return sum((p * (i + 1.5)).sum() * (i + 1) for i, p in enumerate(pieces))

    grads_like_torch(fn, X)


@pytest.mark.parametrize("sized", [False, True])
def test_grad_fn_names_like_torch(backend: str, sized: bool) -> None:
    def names(m):
        t = m.tensor(X, requires_grad=True)
        pieces = t.split([2, 4], 2) if sized else t.chunk(3, 2)
        return [p.grad_fn.name() for p in pieces]

    assert names(tw) == names(torch)


def test_a_write_into_a_piece_reaches_its_base(backend: str) -> None:
    def fn(m, t):
        t = t.clone()
        t.chunk(3, -1)[1].fill_(7.0)
        t.split([1, 4, 2], 1)[2].mul_(-1.0)
        return t

    like_torch(fn, X)


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda m, t: t.chunk(3, 1), id="chunk-empty-dim"),
        pytest.param(lambda m, t: t.split(2, 1), id="split-empty-dim"),
        pytest.param(lambda m, t: t.split(0, 1), id="split-0-empty-dim"),
        pytest.param(lambda m, t: t.split([0, 0], 1), id="sections-empty-dim"),
        pytest.param(lambda m, t: t.chunk(2, 0), id="chunk-around-empty"),
    ],
)
def test_empty_like_torch(backend: str, fn) -> None:
    like_torch(fn, np.zeros((4, 0, 3)))


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda m, t: t.split(0, 1), id="split-0"),
        pytest.param(lambda m, t: t.split(-1, 1), id="split-negative"),
        pytest.param(lambda m, t: t.split([3, 3], 1), id="sections-short"),
        pytest.param(lambda m, t: t.split([-1, 8], 1), id="sections-negative"),
        pytest.param(lambda m, t: t.chunk(0), id="chunk-0"),
        pytest.param(lambda m, t: t.chunk(-2), id="chunk-negative"),
        pytest.param(lambda m, t: t.chunk(2, 3), id="chunk-dim-out-of-range"),
        pytest.param(lambda m, t: t.split(2, -4), id="split-dim-out-of-range"),
        pytest.param(lambda m, t: t.sum().chunk(1), id="chunk-0d"),
        pytest.param(lambda m, t: t.sum().split(1), id="split-0d"),
    ],
)
def test_errors_like_torch(backend: str, fn) -> None:
    raises_like_torch(fn, X)


def test_negative_split_on_an_empty_dimension_raises_like_torch(backend: str) -> None:
    raises_like_torch(lambda m, t: t.split(-1, 1), np.zeros((4, 0, 3)))


def test_pieces_of_a_tensor_without_grad_record_nothing(backend: str) -> None:
    pieces = tw.tensor(X).chunk(3, -1)
    assert not any(p.requires_grad for p in pieces)
    with tw.no_grad():
        pieces = tw.tensor(X, requires_grad=True).split(2, 0)
    with torch.no_grad():
        theirs = torch.tensor(X, requires_grad=True).split(2, 0)
    # views made under no_grad of a tensor that requires grad do too (as leaves), as torch's
    assert [p.requires_grad for p in pieces] == [p.requires_grad for p in theirs]
    assert all(p.grad_fn is None for p in pieces)
    assert_like_torch(pieces, theirs)
