"""fit's loss names: one for every tw.nn loss, each equal to PyTorch's loss on the same batch."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver.nn.modules.loss import _Loss
from tensorweaver.training import LOSSES, fit
from tensorweaver.training.losses import _loss_classes, get_loss
from training_data import blobs

torch = pytest.importorskip("torch")

#: PyTorch's loss classes -> their names in torch.nn.functional (facts of PyTorch's API).
TORCH_FUNCTIONAL = {
    "L1Loss": "l1_loss",
    "MSELoss": "mse_loss",
    "SmoothL1Loss": "smooth_l1_loss",
    "HuberLoss": "huber_loss",
    "CrossEntropyLoss": "cross_entropy",
    "NLLLoss": "nll_loss",
    "BCELoss": "binary_cross_entropy",
    "BCEWithLogitsLoss": "binary_cross_entropy_with_logits",
    "KLDivLoss": "kl_div",
    "PoissonNLLLoss": "poisson_nll_loss",
    "GaussianNLLLoss": "gaussian_nll_loss",
    "MarginRankingLoss": "margin_ranking_loss",
    "HingeEmbeddingLoss": "hinge_embedding_loss",
    "MultiLabelMarginLoss": "multilabel_margin_loss",
    "SoftMarginLoss": "soft_margin_loss",
    "MultiLabelSoftMarginLoss": "multilabel_soft_margin_loss",
    "CosineEmbeddingLoss": "cosine_embedding_loss",
    "MultiMarginLoss": "multi_margin_loss",
    "TripletMarginLoss": "triplet_margin_loss",
    "TripletMarginWithDistanceLoss": "triplet_margin_with_distance_loss",
    "CTCLoss": "ctc_loss",
}

#: The short name PyTorch's class name gives (snake case, without "Loss"); "bce" is fit's
#: loss on logits, so BCELoss goes by its functional name.
SHORT = {
    "BCELoss": "binary_cross_entropy",
    "L1Loss": "l1",
    "MSELoss": "mse",
    "SmoothL1Loss": "smooth_l1",
    "HuberLoss": "huber",
    "CrossEntropyLoss": "cross_entropy",
    "NLLLoss": "nll",
    "BCEWithLogitsLoss": "bce_with_logits",
    "KLDivLoss": "kl_div",
    "PoissonNLLLoss": "poisson_nll",
    "GaussianNLLLoss": "gaussian_nll",
    "MarginRankingLoss": "margin_ranking",
    "HingeEmbeddingLoss": "hinge_embedding",
    "MultiLabelMarginLoss": "multi_label_margin",
    "SoftMarginLoss": "soft_margin",
    "MultiLabelSoftMarginLoss": "multi_label_soft_margin",
    "CosineEmbeddingLoss": "cosine_embedding",
    "MultiMarginLoss": "multi_margin",
    "TripletMarginLoss": "triplet_margin",
    "TripletMarginWithDistanceLoss": "triplet_margin_with_distance",
    "CTCLoss": "ctc",
}


def _tw_losses() -> dict[str, type]:
    return {
        name: value
        for name, value in vars(tw.nn).items()
        if isinstance(value, type) and issubclass(value, _Loss) and not name.startswith("_")
    }


def _batch(name: str, rng: np.random.Generator) -> tuple[object, object, tuple]:
    """``(model output, targets, PyTorch's positional inputs)`` for the loss ``name``."""
    x = rng.standard_normal((6, 4))
    y = rng.standard_normal((6, 4))
    sign = np.where(rng.random((6, 4)) > 0.5, 1.0, -1.0)
    classes = rng.integers(0, 4, 6)
    log_probs = x - np.log(np.exp(x).sum(1, keepdims=True))
    if name in ("L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss"):
        return x, y, (x, y)
    if name in ("CrossEntropyLoss", "MultiMarginLoss"):
        return x, classes, (x, classes)
    if name == "NLLLoss":
        return log_probs, classes, (log_probs, classes)
    if name == "BCELoss":
        probs, target = 1 / (1 + np.exp(-x)), rng.random((6, 4))
        return probs, target, (probs, target)
    if name in ("BCEWithLogitsLoss", "MultiLabelSoftMarginLoss"):
        target = (rng.random((6, 4)) > 0.5).astype(np.float64)
        return x, target, (x, target)
    if name == "KLDivLoss":
        target = np.exp(log_probs[::-1].copy())
        return log_probs, target, (log_probs, target)
    if name == "PoissonNLLLoss":
        counts = rng.poisson(2.0, (6, 4)).astype(np.float64)
        return x, counts, (x, counts)
    if name == "GaussianNLLLoss":
        var = rng.random((6, 4)) + 0.1
        return (x, var), y, (x, y, var)
    if name in ("HingeEmbeddingLoss", "SoftMarginLoss"):
        return x, sign, (x, sign)
    if name == "MultiLabelMarginLoss":
        target = np.array([[3, 0, -1, 1]] * 6)
        return x, target, (x, target)
    if name == "MarginRankingLoss":
        return (x[:, 0], x[:, 1]), sign[:, 0], (x[:, 0], x[:, 1], sign[:, 0])
    if name == "CosineEmbeddingLoss":
        return (x, y), sign[:, 0], (x, y, sign[:, 0])
    if name in ("TripletMarginLoss", "TripletMarginWithDistanceLoss"):
        negative = rng.standard_normal((6, 4))
        return (x, y, negative), classes, (x, y, negative)
    if name == "CTCLoss":
        logits = rng.standard_normal((8, 3, 5))
        log_probs = logits - np.log(np.exp(logits).sum(2, keepdims=True))
        targets = rng.integers(1, 5, (3, 4))
        lengths = (np.array([8, 7, 8]), np.array([4, 2, 3]))
        return log_probs, (targets, *lengths), (log_probs, targets, *lengths)
    raise KeyError(name)


def _tw(value: object) -> object:
    return tuple(_tw(v) for v in value) if isinstance(value, tuple) else tw.tensor(value)


def test_every_tw_nn_loss_has_pytorchs_names() -> None:
    losses = _tw_losses()
    assert {"MSELoss", "CrossEntropyLoss", "BCEWithLogitsLoss"} <= set(losses)
    for cls_name, cls in losses.items():
        names = [name for name, value in LOSSES.items() if value is cls]
        assert names, f"{cls_name} has no name in LOSSES"
        if cls_name in TORCH_FUNCTIONAL:
            assert TORCH_FUNCTIONAL[cls_name] in names, cls_name
            assert SHORT[cls_name] in names, cls_name
    assert set(LOSSES.values()) <= set(losses.values())
    assert LOSSES["bce"] is tw.nn.BCEWithLogitsLoss and LOSSES["mae"] is tw.nn.L1Loss


def test_a_new_loss_layer_is_named_without_editing_a_table(monkeypatch) -> None:
    class SquaredHingeLoss(_Loss):
        def forward(self, input, target):
            return ((1 - input * target).clamp(min=0) ** 2).mean()

    monkeypatch.setattr(tw.nn, "SquaredHingeLoss", SquaredHingeLoss, raising=False)
    names = _loss_classes()
    assert names["squared_hinge"] is SquaredHingeLoss and "squared_hinge_loss" not in names


@pytest.mark.filterwarnings("ignore:.*'batchmean'")  # kl_div's 'mean', warned by both
@pytest.mark.parametrize("cls_name", sorted(TORCH_FUNCTIONAL))
def test_named_loss_equals_pytorchs(backend: str, cls_name: str) -> None:
    if cls_name not in _tw_losses():
        pytest.skip(f"tw.nn has no {cls_name} yet")
    output, target, theirs = _batch(cls_name, np.random.default_rng(0))
    expected = getattr(torch.nn, cls_name)()(*(torch.from_numpy(np.asarray(a)) for a in theirs))
    for name in (SHORT[cls_name], TORCH_FUNCTIONAL[cls_name]):
        mine = get_loss(name)(_tw(output), _tw(target))
        assert mine.item() == pytest.approx(expected.item(), rel=1e-10, abs=1e-12), name


def test_loss_layers_are_called_with_their_settings(backend: str) -> None:
    rng = np.random.default_rng(1)
    x, classes = rng.standard_normal((6, 4)), rng.integers(0, 4, 6)
    mine = get_loss(tw.nn.CrossEntropyLoss(label_smoothing=0.2))(tw.tensor(x), tw.tensor(classes))
    theirs = torch.nn.CrossEntropyLoss(label_smoothing=0.2)(
        torch.from_numpy(x), torch.from_numpy(classes)
    )
    assert mine.item() == pytest.approx(theirs.item(), rel=1e-12)
    if "MarginRankingLoss" in _tw_losses():
        sign = np.where(x[:, 2] > 0, 1.0, -1.0)
        mine = get_loss(tw.nn.MarginRankingLoss(margin=0.5))(
            (tw.tensor(x[:, 0]), tw.tensor(x[:, 1])), tw.tensor(sign)
        )
        theirs = torch.nn.MarginRankingLoss(margin=0.5)(
            *(torch.from_numpy(a) for a in (x[:, 0], x[:, 1], sign))
        )
        assert mine.item() == pytest.approx(theirs.item(), rel=1e-12)


def test_a_callable_loss_is_used_as_is() -> None:
    def loss(output, target):
        return (output - target).abs().amax()

    assert get_loss(loss) is loss


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown loss 'hinge'; use one of \[.*'cross_entropy'"):
        get_loss("hinge")


def test_targets_that_would_broadcast_the_output_are_an_error() -> None:
    with pytest.raises(ValueError, match=r"loss 'mse' needs targets shaped like .*\(4, 1\)"):
        get_loss("mse")(tw.zeros(4, 1), tw.zeros(4))
    # Class scores (N, C) with N == C against (N,) class indices are fine.
    assert get_loss("cross_entropy")(tw.zeros(3, 3), tw.tensor([0, 1, 2])).item() > 0


def test_a_loss_given_too_few_inputs_says_what_it_takes() -> None:
    with pytest.raises(ValueError, match=r"loss 'cross_entropy' takes \(input, target\).*2 out"):
        get_loss("cross_entropy")((tw.zeros(3, 3), tw.zeros(3, 3)), tw.tensor([0, 1, 2]))
    if "MarginRankingLoss" in _tw_losses():
        with pytest.raises(ValueError, match=r"takes \(input1, input2, target\); the model gave 1"):
            get_loss("margin_ranking")(tw.zeros(3), tw.ones(3))


def test_fit_trains_with_a_loss_named_after_pytorchs_functional(backend: str) -> None:
    x, y = blobs()
    model = tw.nn.Sequential(tw.nn.Linear(4, 3), tw.nn.LogSoftmax(1))
    history = fit(model, (x, y), loss="nll_loss", epochs=8, lr=0.05, seed=0, progress=False)
    assert history.train_loss[-1] < 0.5 * history.train_loss[0]
    assert history["accuracy"][-1] > 0.9
