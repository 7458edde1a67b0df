"""cosine_similarity, pairwise_distance and pdist against torch.nn.functional (float64)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
from functional_reference import check, gradcheck, randn

P_VALUES = [2.0, 1.0, 3.0, 0.5, math.inf, -1.0]


@pytest.mark.parametrize(
    ("shape1", "shape2", "dim"),
    [((4, 5), (4, 5), 1), ((3, 1, 5), (4, 5), -1), ((6,), (6,), 0), ((2, 3), (1, 3), 0)],
)
def test_cosine_similarity_broadcasts(backend: str, shape1: tuple, shape2: tuple, dim: int) -> None:
    check(
        lambda F, a, b: F.cosine_similarity(a, b, dim=dim), randn(*shape1), randn(*shape2, seed=3)
    )


@pytest.mark.parametrize("eps", [1e-8, 0.5])
def test_cosine_similarity_clamps_small_norms_like_torch(backend: str, eps: float) -> None:
    # A zero row and a short one: the clamp passes the norm's gradient through unchanged.
    x1 = randn(3, 4)
    x1[0] = 0.0
    x1[1] *= 1e-3
    check(lambda F, a, b: F.cosine_similarity(a, b, eps=eps), x1, randn(3, 4, seed=1))


def test_cosine_similarity_rejects_integers(backend: str) -> None:
    with pytest.raises(RuntimeError, match="floating-point"):
        tw.nn.functional.cosine_similarity(tw.ones(2, 3).long(), tw.ones(2, 3).long())


@pytest.mark.parametrize("p", P_VALUES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance(backend: str, p: float, keepdim: bool) -> None:
    check(
        lambda F, a, b: F.pairwise_distance(a, b, p=p, eps=1e-6, keepdim=keepdim),
        randn(4, 5),
        randn(4, 5, seed=1),
    )


@pytest.mark.parametrize(("shape1", "shape2"), [((5,), (5,)), ((5,), (3, 5)), ((), ())])
def test_pairwise_distance_unbatched_and_broadcast(backend: str, shape1, shape2) -> None:
    check(lambda F, a, b: F.pairwise_distance(a, b), randn(*shape1), randn(*shape2, seed=1))


def test_pairwise_distance_p0_counts_nonzero(backend: str) -> None:
    a = randn(3, 4)
    b = a.copy()
    b[0, :2] += 1.0
    check(lambda F, a, b: F.pairwise_distance(a, b, p=0, eps=0.0), a, b, grad=())


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, math.inf, 0.0])
def test_pdist(backend: str, p: float) -> None:
    x = randn(5, 3)
    x[3] = x[1]  # a zero distance: its gradient is zero, as in PyTorch
    check(lambda F, x: F.pdist(x, p), x, grad=() if p == 0 else None)


def test_pdist_one_row_is_empty(backend: str) -> None:
    check(lambda F, x: F.pdist(x), randn(1, 3))


def test_gradcheck_pdist_and_pairwise_distance(backend: str) -> None:
    gradcheck(lambda F, x: F.pdist(x, 3.0), randn(4, 3))
    gradcheck(lambda F, a, b: F.pairwise_distance(a, b, p=1.5), randn(3, 4), randn(3, 4, seed=1))


@pytest.mark.parametrize(
    ("x", "p", "match"),
    [
        (np.ones(3), 2.0, "only supports 2D tensors"),
        (np.ones((3, 2)), -1.0, "non-negative p"),
        (np.ones((3, 2), dtype=np.int64), 2.0, "floating-point"),
    ],
)
def test_pdist_errors(backend: str, x: np.ndarray, p: float, match: str) -> None:
    with pytest.raises(RuntimeError, match=match):
        tw.nn.functional.pdist(tw.tensor(x), p)
