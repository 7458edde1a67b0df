"""PyTorch 2.13 names the sweep of 2026-12-04 found missing: ``linear_cross_entropy`` and
``LinearCrossEntropyLoss`` (with ``LinearCrossEntropyOptions``), ``conv_tbc``,
``native_channel_shuffle``, ``NLLLoss2d`` and ``Hardtanh``'s ``min_value``/``max_value``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from functional_reference import assert_close, check, randn
from tensor.tensor_reference import like_torch, raises_like_torch

TARGETS = np.array([0, 4, 2, 1])
GRID = np.array([[0, 4], [2, 1], [1, 1], [3, 0]])

LINEAR_CROSS_ENTROPY = {
    "plain": (
        lambda F, x, w, t: F.linear_cross_entropy(x, w, t),
        (randn(4, 3), randn(5, 3, seed=1), TARGETS),
        (0, 1),
    ),
    "bias, class weights, ignore, smoothing, sum": (
        lambda F, x, w, t, b, c: F.linear_cross_entropy(
            x, w, t, linear_bias=b, weight=c, reduction="sum", ignore_index=2, label_smoothing=0.2
        ),
        (randn(4, 3), randn(5, 3, seed=1), TARGETS, randn(5, seed=2), np.abs(randn(5)) + 0.1),
        (0, 1, 3),
    ),
    "K-dimensional, none": (
        lambda F, x, w, t, b: F.linear_cross_entropy(x, w, t, linear_bias=b, reduction="none"),
        (randn(4, 3), randn(5, 2, 3, seed=1), GRID, randn(5, 2, seed=2)),
        (0, 1, 3),
    ),
    "probabilities": (
        lambda F, x, w, t: F.linear_cross_entropy(x, w, t, label_smoothing=0.1),
        (randn(4, 3), randn(5, 3, seed=1), np.abs(randn(4, 5, seed=2))),
        (0, 1, 2),
    ),
    "unbatched": (
        lambda F, x, w, t: F.linear_cross_entropy(x, w, t),
        (randn(3), randn(5, 3, seed=1), np.array(3)),
        (0, 1),
    ),
}


@pytest.mark.parametrize("case", LINEAR_CROSS_ENTROPY.values(), ids=LINEAR_CROSS_ENTROPY)
def test_linear_cross_entropy(backend: str, case: tuple) -> None:
    fn, arrays, grad = case
    check(fn, *arrays, grad=grad)


def test_linear_cross_entropy_options_change_nothing(backend: str) -> None:
    # Against PyTorch's reference path: its chunked one (the same answers) takes seconds to
    # set up on first use.
    x, w = randn(4, 3), randn(5, 3, seed=1)
    options = tw.nn.LinearCrossEntropyOptions(batch_chunk_size=2, acc_policy="accurate")
    ours = tw.nn.functional.linear_cross_entropy(
        tw.tensor(x), tw.tensor(w), tw.tensor(TARGETS), options=options
    )
    theirs = torch.nn.functional.linear_cross_entropy(
        torch.tensor(x), torch.tensor(w), torch.tensor(TARGETS)
    )
    assert_close(ours, theirs)


ERRORS = {
    "in_features differ": lambda m: m.nn.functional.linear_cross_entropy(
        m.ones(4, 3), m.ones(5, 4), m.tensor([0, 1, 2, 3])
    ),
    "bias shape": lambda m: m.nn.functional.linear_cross_entropy(
        m.ones(4, 3), m.ones(5, 3), m.tensor([0, 1, 2, 3]), linear_bias=m.ones(4)
    ),
    "3-D input": lambda m: m.nn.functional.linear_cross_entropy(
        m.ones(2, 4, 3), m.ones(5, 3), m.tensor([0, 1, 2, 3])
    ),
    "ignore_index with probabilities": lambda m: m.nn.functional.linear_cross_entropy(
        m.ones(4, 3), m.ones(5, 3), m.ones(4, 5) / 5, ignore_index=-100
    ),
    "K-dimensional unbatched": lambda m: m.nn.functional.linear_cross_entropy(
        m.ones(3), m.ones(5, 2, 3), m.tensor([0, 1])
    ),
    "module class weights": lambda m: m.nn.LinearCrossEntropyLoss(3, 5, weight=m.ones(4)),
    "module smoothing": lambda m: m.nn.LinearCrossEntropyLoss(3, 5, label_smoothing=2.0),
}


@pytest.mark.parametrize("call", ERRORS.values(), ids=ERRORS)
def test_linear_cross_entropy_errors(backend: str, call: Any) -> None:
    raises_like_torch(call)


def _module_loss(m: Any, x: Any, t: Any, **kwargs: Any) -> tuple:
    loss = m.nn.LinearCrossEntropyLoss(3, 5, **kwargs).double()
    with m.no_grad():
        for p in loss.parameters():
            p.copy_(m.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape))))
    assert sorted(loss.state_dict()) == ["linear.bias", "linear.weight"]  # PyTorch's keys
    return loss(x, t), tuple(loss.linear.weight.shape)


@pytest.mark.parametrize(
    ("kwargs", "target"),
    [
        (dict(bias=True, label_smoothing=0.1), TARGETS),  # (both with a bias)
        (dict(out_features=(2,), bias=True, reduction="sum"), GRID),
    ],
    ids=["bias, smoothing", "K-dimensional"],
)
def test_linear_cross_entropy_loss_layer(backend: str, kwargs: dict, target: Any) -> None:
    # Same loss, same state-dict keys and the same flat weight storage as PyTorch.
    like_torch(lambda m, x, t: _module_loss(m, x, t, **kwargs), randn(4, 3), target)


def test_conv_tbc(backend: str) -> None:
    check(lambda F, x, w, b: F.conv_tbc(x, w, b, 1), randn(5, 2, 3), randn(3, 3, 4), randn(4))


def test_native_channel_shuffle(backend: str) -> None:
    like_torch(lambda m, x: m.nn.functional.native_channel_shuffle(x, 2), randn(1, 4, 3))


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_nll_loss_2d_is_nll_loss(backend: str) -> None:
    target = np.array([[[0, 2], [1, 1]]])
    like_torch(lambda m, x, t: m.nn.NLLLoss2d(reduction="sum")(x, t), randn(1, 3, 2, 2), target)
    with pytest.warns(FutureWarning, match="NLLLoss2d"):
        tw.nn.NLLLoss2d()


def test_hardtanh_old_keywords(backend: str) -> None:
    with pytest.warns(FutureWarning) as caught:
        like_torch(lambda m, x: m.nn.Hardtanh(min_value=-0.5, max_value=0.7)(x), randn(6))
    said = " ".join(str(w.message) for w in caught)
    assert "`min_value` is deprecated" in said and "`max_value` is deprecated" in said
