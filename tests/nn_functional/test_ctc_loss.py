"""ctc_loss against torch.nn.functional.ctc_loss (float64): losses and PyTorch's gradient."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from functional_reference import check, gradcheck, host, randn

REDUCTIONS = ["mean", "sum", "none"]
rng = np.random.default_rng(0)

# Repeated labels (1, 1), a zero-length target, a full-length one and shorter inputs.
TARGETS = np.array([[1, 1, 2, 3], [2, 0, 0, 0], [3, 3, 3, 0], [1, 2, 1, 2], [4, 0, 0, 0]])
TARGET_LENGTHS = [4, 1, 3, 0, 1]
INPUT_LENGTHS = [12, 9, 7, 12, 1]


def log_probs(steps: int = 12, batch: int = 5, classes: int = 5, seed: int = 0) -> np.ndarray:
    x = randn(steps, batch, classes, seed=seed, scale=2)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def concatenated(targets: np.ndarray, lengths: list[int]) -> np.ndarray:
    return np.concatenate([row[:n] for row, n in zip(targets, lengths)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("layout", ["padded", "concatenated"])
@pytest.mark.parametrize("lengths_as", ["tensor", "tuple"])
def test_ctc_loss_matches_torch(backend: str, reduction: str, layout: str, lengths_as: str) -> None:
    targets = TARGETS if layout == "padded" else concatenated(TARGETS, TARGET_LENGTHS)
    if lengths_as == "tensor":
        check(
            lambda F, lp, t, il, tl: F.ctc_loss(lp, t, il, tl, reduction=reduction),
            log_probs(),
            targets,
            np.array(INPUT_LENGTHS),
            np.array(TARGET_LENGTHS),
        )
    else:
        check(
            lambda F, lp, t: F.ctc_loss(
                lp, t, tuple(INPUT_LENGTHS), tuple(TARGET_LENGTHS), reduction=reduction
            ),
            log_probs(),
            targets,
        )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ctc_loss_random_cases_with_another_blank(backend: str, seed: int) -> None:
    local = np.random.default_rng(seed)
    steps, batch, classes, blank = 15, 4, 4, 2
    lengths = local.integers(0, 6, size=batch)
    labels = [c for c in range(classes) if c != blank]
    targets = local.choice(labels, size=(batch, 6))
    inputs = local.integers(lengths * 2 + 1, steps + 1)
    check(
        lambda F, lp, t, il, tl: F.ctc_loss(lp, t, il, tl, blank=blank, reduction="sum"),
        log_probs(steps, batch, classes, seed=seed),
        targets,
        inputs,
        lengths,
    )


def test_ctc_loss_through_log_softmax_gradient(backend: str) -> None:
    check(
        lambda F, x, t: F.ctc_loss(
            F.log_softmax(x, 2), t, INPUT_LENGTHS, TARGET_LENGTHS, reduction="mean"
        ),
        randn(12, 5, 5, seed=4),
        TARGETS,
    )


def test_gradcheck_ctc_loss_of_logits(backend: str) -> None:
    # PyTorch's gradient is the true one with respect to the logits of a log_softmax.
    gradcheck(
        lambda F, x: F.ctc_loss(
            F.log_softmax(x, 2), tw.tensor(TARGETS[:3]), INPUT_LENGTHS[:3], TARGET_LENGTHS[:3]
        ),
        randn(12, 3, 5, seed=5),
        samples=10,
    )


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_loss_impossible_alignments(backend: str, zero_infinity: bool, reduction: str) -> None:
    # Three labels (one repeat) need at least 4 steps: 3 are too few, and no input steps
    # leave only the empty target possible.
    check(
        lambda F, lp, t: F.ctc_loss(
            lp, t, [3, 9, 0, 0], [3, 1, 0, 1], reduction=reduction, zero_infinity=zero_infinity
        ),
        log_probs(batch=4),
        np.array([[1, 1, 2], [2, 0, 0], [1, 1, 1], [3, 0, 0]]),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_loss_unbatched(backend: str, reduction: str) -> None:
    check(
        lambda F, lp, t, il, tl: F.ctc_loss(lp, t, il, tl, reduction=reduction),
        log_probs(batch=1)[:, 0],
        np.array([1, 3, 3]),
        np.array(10),
        np.array(3),
    )


def test_ctc_loss_float32(backend: str) -> None:
    lp = log_probs().astype(np.float32)
    ours = tw.tensor(lp, requires_grad=True)
    theirs = torch.tensor(lp, requires_grad=True)
    a = tw.nn.functional.ctc_loss(ours, tw.tensor(TARGETS), INPUT_LENGTHS, TARGET_LENGTHS)
    e = torch.nn.functional.ctc_loss(theirs, torch.tensor(TARGETS), INPUT_LENGTHS, TARGET_LENGTHS)
    a.backward()
    e.backward()
    assert a.dtype is tw.float32
    np.testing.assert_allclose(a.item(), e.item(), rtol=1e-5)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"input_lengths": [12, 12]}, RuntimeError, "input_lengths must be of size batch_size"),
        ({"target_lengths": [1]}, RuntimeError, "target_lengths must be of size batch_size"),
        ({"input_lengths": [13, 1, 1, 1, 1]}, RuntimeError, r"input_lengths must lie in \[0, 12\]"),
        ({"target_lengths": [5, 1, 1, 1, 1]}, RuntimeError, "shorter than the longest target"),
        ({"blank": 5}, RuntimeError, "blank"),
        ({"reduction": "avg"}, ValueError, "not a valid value for reduction"),
        ({"targets": np.array([[1, 9, 2, 3]] * 5)}, RuntimeError, r"labels must lie in \[0, 5\)"),
        ({"targets": np.array([1, 2, 3])}, RuntimeError, "lengths add up to 9"),
    ],
)
def test_ctc_loss_errors(backend: str, kwargs: dict, error: type, match: str) -> None:
    arguments = {
        "log_probs": tw.tensor(log_probs()),
        "targets": TARGETS,
        "input_lengths": INPUT_LENGTHS,
        "target_lengths": TARGET_LENGTHS,
        **kwargs,
    }
    arguments["targets"] = tw.tensor(arguments["targets"])
    with pytest.raises(error, match=match):
        tw.nn.functional.ctc_loss(**arguments)
    if "labels" in match:
        return  # PyTorch reads out-of-range labels unchecked
    theirs = {
        k: torch.tensor(host(v)) if isinstance(v, tw.Tensor) else v for k, v in arguments.items()
    }
    with pytest.raises((RuntimeError, ValueError)):  # PyTorch refuses these too
        torch.nn.functional.ctc_loss(**theirs)


def test_ctc_loss_takes_int32_targets_and_lengths(backend: str) -> None:
    check(
        lambda F, lp, t, il, tl: F.ctc_loss(lp, t, il, tl, reduction="none"),
        log_probs(),
        TARGETS.astype(np.int32),
        np.array(INPUT_LENGTHS, dtype=np.int32),
        np.array(TARGET_LENGTHS, dtype=np.int32),
    )


def test_ctc_loss_rejects_float_lengths(backend: str) -> None:
    with pytest.raises(RuntimeError, match="input_lengths must be integral"):
        tw.nn.functional.ctc_loss(
            tw.tensor(log_probs()), tw.tensor(TARGETS), tw.ones(5) * 3, TARGET_LENGTHS
        )
