"""The new loss, distance and EmbeddingBag layers against torch.nn (float64)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import assert_close, check_layer, host
from tensorweaver import nn

rng = np.random.default_rng(0)


def _signs(*shape: int) -> np.ndarray:
    return rng.choice([-1.0, 1.0], size=shape)


def _int_signs(*shape: int) -> np.ndarray:
    """Targets only compared, never differentiated: integers, so neither side asks a gradient."""
    return rng.choice([-1, 1], size=shape)


LOSSES = [
    (
        "MarginRankingLoss",
        {"margin": 0.3},
        lambda: [rng.standard_normal(5), rng.standard_normal(5), _signs(5)],
    ),
    (
        "HingeEmbeddingLoss",
        {"margin": 0.5},
        lambda: [rng.standard_normal((3, 4)), _int_signs(3, 4)],
    ),
    ("SoftMarginLoss", {}, lambda: [rng.standard_normal((3, 4)), _int_signs(3, 4)]),
    (
        "MultiLabelSoftMarginLoss",
        {"weight": np.array([1.0, 2.0, 0.5])},
        lambda: [rng.standard_normal((4, 3)), rng.integers(0, 2, (4, 3)).astype(float)],
    ),
    (
        "MultiMarginLoss",
        {"p": 2, "margin": 0.7, "weight": np.array([1.0, 2.0, 0.5])},
        lambda: [rng.standard_normal((4, 3)), rng.integers(0, 3, 4)],
    ),
    (
        "MultiLabelMarginLoss",
        {},
        lambda: [rng.standard_normal((2, 4)), np.array([[3, 0, -1, 1], [1, 2, 0, -1]])],
    ),
    (
        "CosineEmbeddingLoss",
        {"margin": 0.2},
        lambda: [rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), _int_signs(4)],
    ),
    (
        "TripletMarginLoss",
        {"p": 1.0, "swap": True},
        lambda: [rng.standard_normal((4, 3)) for _ in range(3)],
    ),
    (
        "TripletMarginWithDistanceLoss",
        {"swap": True, "margin": 0.5},
        lambda: [rng.standard_normal((4, 3)) for _ in range(3)],
    ),
    (
        "PoissonNLLLoss",
        {"full": True},
        lambda: [rng.standard_normal((3, 4)), rng.poisson(2.0, (3, 4)).astype(float)],
    ),
    (
        "GaussianNLLLoss",
        {"full": True},
        lambda: [
            rng.standard_normal((3, 4)),
            rng.standard_normal((3, 4)),
            rng.random((3, 1)) + 0.1,
        ],
    ),
]


DISTANCES = [
    (
        "CosineSimilarity",
        {"dim": 0},
        lambda: [rng.standard_normal((3, 4)), rng.standard_normal((3, 4))],
    ),
    (
        "PairwiseDistance",
        {"p": 3.0, "keepdim": True},
        lambda: [rng.standard_normal((3, 4)), rng.standard_normal((3, 4))],
    ),
]


def _check(name: str, kwargs: dict, inputs: list) -> None:
    ours = {k: tw.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    theirs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    check_layer(getattr(nn, name)(**ours), getattr(torch.nn, name)(**theirs), *inputs)


@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize(("name", "kwargs", "inputs"), LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_layer_matches_torch(
    backend: str, name: str, kwargs: dict, inputs, reduction: str
) -> None:
    _check(name, {**kwargs, "reduction": reduction}, inputs())


@pytest.mark.parametrize(("name", "kwargs", "inputs"), DISTANCES, ids=[c[0] for c in DISTANCES])
def test_distance_layer_matches_torch(backend: str, name: str, kwargs: dict, inputs) -> None:
    _check(name, kwargs, inputs())


def test_ctc_loss_layer(backend: str) -> None:
    x = rng.standard_normal((8, 2, 4))
    lp = x - np.log(np.exp(x).sum(-1, keepdims=True))
    targets = np.array([[1, 1, 2], [3, 0, 0]])
    ours = nn.CTCLoss(blank=0, reduction="mean", zero_infinity=True)
    theirs = torch.nn.CTCLoss(blank=0, reduction="mean", zero_infinity=True)
    lp_ours, lp_theirs = tw.tensor(lp, requires_grad=True), torch.tensor(lp, requires_grad=True)
    a = ours(lp_ours, tw.tensor(targets), tw.tensor([8, 3]), tw.tensor([3, 1]))
    e = theirs(lp_theirs, torch.tensor(targets), torch.tensor([8, 3]), torch.tensor([3, 1]))
    assert_close(a, e)
    a.backward()
    e.backward()
    assert_close(lp_ours.grad, lp_theirs.grad)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_layer(backend: str, mode: str) -> None:
    theirs = torch.nn.EmbeddingBag(6, 3, mode=mode, padding_idx=2)
    ours = nn.EmbeddingBag(6, 3, mode=mode, padding_idx=2)
    assert not host(ours.weight)[2].any()  # the padding row starts at zero
    check_layer(ours, theirs, np.array([1, 2, 4, 5, 4]), np.array([0, 2, 2]))
    assert repr(ours) == repr(theirs)


def test_embedding_bag_from_pretrained(backend: str) -> None:
    weight = rng.standard_normal((5, 2))
    bag = nn.EmbeddingBag.from_pretrained(tw.tensor(weight), mode="sum", include_last_offset=True)
    assert not bag.weight.requires_grad
    out = bag(tw.tensor([0, 4, 4, 1]), tw.tensor([0, 1, 4]))
    expected = torch.nn.EmbeddingBag.from_pretrained(
        torch.tensor(weight), mode="sum", include_last_offset=True
    )(torch.tensor([0, 4, 4, 1]), torch.tensor([0, 1, 4]))
    assert_close(out, expected)
    assert nn.EmbeddingBag.from_pretrained(tw.tensor(weight), freeze=False).weight.requires_grad
