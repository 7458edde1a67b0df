"""The named losses are the tw.nn.functional losses (and so PyTorch's); metrics by hand."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver.training import LOSSES
from tensorweaver.training.losses import get_loss
from tensorweaver.training.metrics import Running, accuracy, get_metrics

torch = pytest.importorskip("torch")

# name -> (the tw.nn.functional loss, PyTorch's, whether targets are class indices)
NAMED = {
    "mse": (F.mse_loss, torch.nn.functional.mse_loss, False),
    "mae": (F.l1_loss, torch.nn.functional.l1_loss, False),
    "huber": (F.huber_loss, torch.nn.functional.huber_loss, False),
    "bce": (
        F.binary_cross_entropy_with_logits,
        torch.nn.functional.binary_cross_entropy_with_logits,
        False,
    ),
    "cross_entropy": (F.cross_entropy, torch.nn.functional.cross_entropy, True),
}


def test_the_original_names_still_name_their_losses() -> None:
    assert set(NAMED) <= set(LOSSES)


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_loss_equals_the_functional_one(backend: str, name: str) -> None:
    functional, theirs, classes = NAMED[name]
    rng = np.random.default_rng(0)
    out = 2 * rng.standard_normal((6, 4))
    target = rng.integers(0, 4, 6) if classes else rng.random((6, 4))
    mine = get_loss(name)(tw.tensor(out), tw.tensor(target))
    assert mine.item() == functional(tw.tensor(out), tw.tensor(target)).item()
    expected = theirs(torch.from_numpy(out), torch.from_numpy(target)).item()
    assert mine.item() == pytest.approx(expected, rel=1e-12)


def test_a_callable_loss_is_used_as_is() -> None:
    def loss(output, target):
        return (output - target).abs().amax()

    assert get_loss(loss) is loss


def test_accuracy_counts_classes_skips_ignored_and_thresholds_logits() -> None:
    scores = tw.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    total, count = accuracy(scores, tw.tensor([1, 1, -100, 0]))
    assert (total.item(), count.item()) == (2, 3)
    total, count = accuracy(tw.tensor([[2.0], [-1.0], [0.5]]), tw.tensor([[1.0], [1.0], [0.0]]))
    assert (total.item(), count) == (1, 3)
    with pytest.raises(ValueError, match=r"accuracy: .*got output \(4, 2\) and target \(4, 3\)"):
        accuracy(scores, tw.zeros(4, 3))


def test_running_weights_batches_by_their_size() -> None:
    running = Running(get_metrics(("accuracy", "mse")))
    rng = np.random.default_rng(0)
    outs = [rng.standard_normal((n, 1)) for n in (5, 3)]
    targets = [(rng.random((n, 1)) > 0.5).astype(np.float64) for n in (5, 3)]
    for out, target in zip(outs, targets):
        o, t = tw.tensor(out), tw.tensor(target)
        running.update(((o - t) ** 2).mean(), o, t)
    out, target = np.concatenate(outs), np.concatenate(targets)
    result = running.result()
    assert result["loss"] == pytest.approx(((out - target) ** 2).mean())
    assert result["mse"] == pytest.approx(((out - target) ** 2).mean())
    assert result["accuracy"] == pytest.approx(((out > 0) == (target > 0.5)).mean())
