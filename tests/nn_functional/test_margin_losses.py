"""Margin, embedding and likelihood losses against torch.nn.functional in float64 (and
cross_entropy's refusal of ignore_index with probability targets)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from functional_reference import check, gradcheck, randn

REDUCTIONS = ["mean", "sum", "none"]
rng = np.random.default_rng(0)


def signs(*shape: int) -> np.ndarray:
    return rng.choice([-1.0, 1.0], size=shape)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.5])
@pytest.mark.parametrize("shape", [(6,), (3, 4)])
def test_margin_ranking_loss(backend: str, reduction: str, margin: float, shape: tuple) -> None:
    check(
        lambda F, a, b, y: F.margin_ranking_loss(a, b, y, margin=margin, reduction=reduction),
        randn(*shape),
        randn(*shape, seed=1),
        signs(*shape),
        grad=(0, 1),
    )


def test_margin_ranking_loss_rejects_rank_mismatch(backend: str) -> None:
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        tw.nn.functional.margin_ranking_loss(tw.ones(3, 4), tw.ones(4), tw.ones(3, 4))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [1.0, 0.3])
def test_hinge_embedding_loss(backend: str, reduction: str, margin: float) -> None:
    target = signs(3, 4)
    target[0, :2] = [2.0, 0.0]  # neither 1 nor -1: both terms, as in PyTorch
    check(
        lambda F, x, y: F.hinge_embedding_loss(x, y, margin=margin, reduction=reduction),
        randn(3, 4),
        target,
        grad=(0,),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5,), (3, 4)])
def test_soft_margin_loss(backend: str, reduction: str, shape: tuple) -> None:
    check(
        lambda F, x, y: F.soft_margin_loss(x, y, reduction=reduction),
        randn(*shape, scale=2),
        signs(*shape),
        grad=(0,),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(5,), (3, 5)])
def test_multilabel_soft_margin_loss(
    backend: str, reduction: str, weighted: bool, shape: tuple
) -> None:
    arrays = [randn(*shape, scale=2), rng.integers(0, 2, size=shape).astype(float)]
    arrays += [rng.random(shape[-1]) + 0.5] if weighted else []
    check(
        lambda F, x, y, *w: F.multilabel_soft_margin_loss(x, y, *w, reduction=reduction),
        *arrays,
        grad=(0,),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(("shape", "target"), [((4, 5), (4,)), ((5,), ()), ((5,), (1,))])
def test_multi_margin_loss(
    backend: str, reduction: str, p: int, weighted: bool, shape: tuple, target: tuple
) -> None:
    arrays = [randn(*shape), rng.integers(0, 5, size=target)]
    arrays += [rng.random(5) + 0.5] if weighted else []
    check(
        lambda F, x, t, *w: F.multi_margin_loss(
            x, t, p=p, margin=0.8, weight=w[0] if w else None, reduction=reduction
        ),
        *arrays,
        grad=(0,),
    )


@pytest.mark.parametrize(
    ("target", "error", "match"),
    [
        (np.array([1, 2, 5]), RuntimeError, "out of range"),
        (np.array([1, 2]), RuntimeError, "one class per sample"),
        (np.array([1.0, 2.0, 3.0]), RuntimeError, "int64"),
    ],
)
def test_multi_margin_loss_errors(backend: str, target, error, match) -> None:
    with pytest.raises(error, match=match):
        tw.nn.functional.multi_margin_loss(tw.ones(3, 5), tw.tensor(target))
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        tw.nn.functional.multi_margin_loss(tw.ones(3, 5), tw.tensor([0, 1, 2]), p=3)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("batched", [False, True])
def test_multilabel_margin_loss(backend: str, reduction: str, batched: bool) -> None:
    # Rows end at their first -1; a repeated label counts twice, as in PyTorch.
    target = np.array([[3, 0, -1, 1, 2], [1, 1, 4, -1, -1], [-1, 2, 0, 0, 0], [0, 1, 2, 3, 4]])
    x = randn(4, 5)
    if not batched:
        x, target = x[0], target[0]
    check(lambda F, x, t: F.multilabel_margin_loss(x, t, reduction=reduction), x, target, grad=(0,))


def test_multilabel_margin_loss_errors(backend: str) -> None:
    with pytest.raises(RuntimeError, match="out of range"):
        tw.nn.functional.multilabel_margin_loss(tw.ones(2, 3), tw.tensor([[0, -2, 1], [0, 1, 2]]))
    with pytest.raises(RuntimeError, match="input's shape"):
        tw.nn.functional.multilabel_margin_loss(tw.ones(2, 3), tw.tensor([[0, 1], [0, 1]]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.4])
@pytest.mark.parametrize("batched", [False, True])
def test_cosine_embedding_loss(backend: str, reduction: str, margin: float, batched: bool) -> None:
    shape, target = ((6, 4), signs(6)) if batched else ((4,), np.array(-1.0))
    check(
        lambda F, a, b, y: F.cosine_embedding_loss(a, b, y, margin=margin, reduction=reduction),
        randn(*shape),
        randn(*shape, seed=1),
        target,
        grad=(0, 1),
    )


def test_cosine_embedding_loss_rejects_bad_ranks(backend: str) -> None:
    with pytest.raises(RuntimeError, match="1-D target expects 2-D inputs"):
        tw.nn.functional.cosine_embedding_loss(tw.ones(4), tw.ones(4), tw.ones(1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("shape", [(5, 4), (4,)])
def test_triplet_margin_loss(backend: str, reduction: str, p: float, swap: bool, shape) -> None:
    check(
        lambda F, a, pos, neg: F.triplet_margin_loss(
            a, pos, neg, margin=1.5, p=p, eps=1e-4, swap=swap, reduction=reduction
        ),
        randn(*shape),
        randn(*shape, seed=1),
        randn(*shape, seed=2),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("distance", ["default", "cosine"])
def test_triplet_margin_with_distance_loss(
    backend: str, reduction: str, swap: bool, distance: str
) -> None:
    def fn(F, a, pos, neg):
        def cosine(x, y):
            return 1 - F.cosine_similarity(x, y)

        return F.triplet_margin_with_distance_loss(
            a,
            pos,
            neg,
            distance_function=cosine if distance == "cosine" else None,
            margin=0.7,
            swap=swap,
            reduction=reduction,
        )

    check(fn, randn(5, 4), randn(5, 4, seed=1), randn(5, 4, seed=2))


@pytest.mark.parametrize("name", ["triplet_margin_loss", "triplet_margin_with_distance_loss"])
def test_triplet_losses_errors(backend: str, name: str) -> None:
    loss = getattr(tw.nn.functional, name)
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        loss(tw.ones(2, 3), tw.ones(2, 3), tw.ones(2, 3), margin=0.0)
    with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D"):
        loss(tw.ones(2, 3), tw.ones(3), tw.ones(2, 3))
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        getattr(torch.nn.functional, name)(
            torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 3), margin=0.0
        )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [False, True])
def test_poisson_nll_loss(backend: str, reduction: str, log_input: bool, full: bool) -> None:
    x = randn(3, 4) if log_input else rng.random((3, 4)) + 0.1
    target = rng.poisson(2.0, size=(3, 4)).astype(float)  # zeros and ones included
    target[0, :2] = [0.0, 1.0]
    check(
        lambda F, x, y: F.poisson_nll_loss(
            x, y, log_input=log_input, full=full, eps=1e-6, reduction=reduction
        ),
        x,
        target,
        grad=(0,),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("var_shape", [(3, 4, 5), (3, 4), (3, 4, 1), (3, 1, 5), "float"])
def test_gaussian_nll_loss(backend: str, reduction: str, full: bool, var_shape) -> None:
    arrays = [randn(3, 4, 5), randn(3, 4, 5, seed=1)]
    if var_shape == "float":
        check(
            lambda F, x, y: F.gaussian_nll_loss(x, y, 0.7, full=full, reduction=reduction),
            *arrays,
        )
        return
    var = rng.random(var_shape) + 0.1
    var.flat[0] = 1e-9  # clamped at eps: the clamp passes the gradient through, as in PyTorch
    check(
        lambda F, x, y, v: F.gaussian_nll_loss(x, y, v, full=full, eps=1e-4, reduction=reduction),
        *arrays,
        var,
    )


@pytest.mark.parametrize(
    ("var", "match"),
    [
        (np.ones((3, 2)), "incorrect size"),
        (-np.ones((3, 4)), "negative"),
        (np.ones((1, 1)), "incorrect size"),
    ],
)
def test_gaussian_nll_loss_errors(backend: str, var: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        tw.nn.functional.gaussian_nll_loss(tw.ones(3, 4), tw.ones(3, 4), tw.tensor(var))
    with pytest.raises(ValueError, match=match):
        torch.nn.functional.gaussian_nll_loss(torch.ones(3, 4), torch.ones(3, 4), torch.tensor(var))


def test_gradcheck_margin_losses(backend: str) -> None:
    gradcheck(
        lambda F, x: F.multi_margin_loss(
            x, tw.tensor([0, 2, 1]), p=2, weight=tw.tensor([1.0, 2.0, 0.5])
        ),
        randn(3, 3),
    )
    gradcheck(
        lambda F, a, b: F.cosine_embedding_loss(a, b, tw.tensor([1.0, -1.0, 1.0])),
        randn(3, 4),
        randn(3, 4, seed=1),
    )


def test_cross_entropy_probability_targets_refuse_ignore_index_like_torch(backend: str) -> None:
    x, p = randn(3, 4), np.full((3, 4), 0.25)
    with pytest.raises(RuntimeError, match="ignore_index"):
        tw.nn.functional.cross_entropy(tw.tensor(x), tw.tensor(p), ignore_index=1)
    with pytest.raises(RuntimeError, match="ignore_index"):
        torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(p), ignore_index=1)
