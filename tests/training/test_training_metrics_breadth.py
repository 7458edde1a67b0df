"""fit's metrics against scikit-learn on the same predictions, batch by batch and at once."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import tensorweaver as tw
from sklearn import metrics as skm
from sklearn.datasets import load_digits
from tensorweaver.models import MLP
from tensorweaver.training import evaluate, fit, predict
from tensorweaver.training.metrics import (
    AUROC,
    F1Score,
    MeanAbsoluteError,
    MeanSquaredError,
    Metric,
    Perplexity,
    PrecisionScore,
    R2Score,
    RecallScore,
    RootMeanSquaredError,
    Running,
    TopKAccuracy,
    get_metrics,
)

SKLEARN_PRF = {PrecisionScore: skm.precision_score, RecallScore: skm.recall_score}
SKLEARN_PRF[F1Score] = skm.f1_score


def streamed(metric: Metric, output: np.ndarray, target: np.ndarray, cuts=(7, 19, 20)) -> float:
    """``metric`` over ``output``/``target`` fed in batches split at ``cuts`` (rows)."""
    metric = metric.fresh()
    edges = [0, *cuts, len(target)]
    for a, b in zip(edges, edges[1:]):
        metric.update(tw.tensor(output[a:b]), tw.tensor(target[a:b]))
    value = metric.compute()
    return value.item() if isinstance(value, tw.Tensor) else value


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def class_data(n: int = 60, classes: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Scores and targets where class 4 is never predicted and class 3 never a target."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((n, classes))
    scores[:, 4] -= 10
    target = rng.choice([0, 1, 2, 4], n)
    return scores, target


def same(mine: float, theirs: float) -> bool:
    return (math.isnan(mine) and math.isnan(theirs)) or mine == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("zero_division", [0.0, 1.0, math.nan])
def test_precision_recall_f1_match_sklearn_on_classes(backend: str, zero_division: float) -> None:
    scores, target = class_data()
    predicted = scores.argmax(1)
    for cls, theirs in SKLEARN_PRF.items():
        for average in ("macro", "micro", "weighted"):
            mine = streamed(cls(average, zero_division=zero_division), scores, target)
            expected = theirs(target, predicted, average=average, zero_division=zero_division)
            assert same(mine, expected), (cls.__name__, average)
        assert streamed(cls(), scores, target) == streamed(cls("macro"), scores, target)


def test_precision_recall_f1_match_sklearn_on_binary_logits(backend: str) -> None:
    rng = np.random.default_rng(1)
    logits, target = rng.standard_normal(40), (rng.random(40) > 0.4).astype(np.float64)
    for cls, theirs in SKLEARN_PRF.items():
        for average in (None, "binary", "macro", "micro", "weighted"):
            mine = streamed(cls(average), logits, target)
            expected = theirs(target, logits > 0, average=average or "binary")
            assert mine == pytest.approx(expected, abs=1e-12), (cls.__name__, average)


def test_a_class_never_predicted_gives_sklearns_zero_division(backend: str) -> None:
    target = np.array([1.0, 1.0, 0.0, 0.0, 1.0])
    logits = -np.ones(5)  # nothing predicted positive: precision is 0 / 0
    for zero_division in (0.0, 1.0):
        mine = streamed(PrecisionScore(zero_division=zero_division), logits, target, cuts=(2,))
        assert mine == skm.precision_score(target, logits > 0, zero_division=zero_division)
    assert streamed(F1Score(), logits, target, cuts=(2,)) == 0.0


def test_ignored_targets_are_left_out_of_class_counts(backend: str) -> None:
    scores, target = class_data(seed=2)
    target[::4] = -100
    kept = target != -100
    for cls, theirs in SKLEARN_PRF.items():
        mine = streamed(cls("weighted"), scores, target)
        expected = theirs(target[kept], scores[kept].argmax(1), average="weighted", zero_division=0)
        assert mine == pytest.approx(expected, abs=1e-12)


def test_auroc_matches_sklearn_binary_with_ties(backend: str) -> None:
    rng = np.random.default_rng(3)
    logits = np.round(rng.standard_normal(80), 1)  # many equal scores across classes
    target = (rng.random(80) < 0.3 + 0.4 * (logits > 0)).astype(np.float64)
    assert len(np.unique(logits)) < 40
    expected = skm.roc_auc_score(target, logits)
    assert streamed(AUROC(), logits, target) == pytest.approx(expected, abs=1e-12)
    assert streamed(AUROC(), np.zeros(80), target) == 0.5  # all tied


def test_auroc_matches_sklearn_one_vs_rest_macro(backend: str) -> None:
    rng = np.random.default_rng(4)
    logits, target = rng.standard_normal((70, 4)), rng.integers(0, 4, 70)
    logits[np.arange(70), target] += 1.0
    expected = skm.roc_auc_score(target, softmax(logits), multi_class="ovr", average="macro")
    assert streamed(AUROC(), logits, target) == pytest.approx(expected, abs=1e-12)
    probs = np.round(softmax(logits), 2)  # ties within each class's column
    probs /= probs.sum(1, keepdims=True)
    expected = skm.roc_auc_score(target, probs, multi_class="ovr", average="macro")
    assert streamed(AUROC(from_logits=False), probs, target) == pytest.approx(expected, abs=1e-12)


def test_auroc_of_a_single_class_is_nan_as_sklearn(backend: str) -> None:
    logits, target = np.linspace(-1, 1, 10), np.ones(10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns that the score is undefined
        assert math.isnan(skm.roc_auc_score(target, logits))
    assert math.isnan(streamed(AUROC(), logits, target, cuts=(4,)))


def test_auroc_averages_the_classes_present_in_the_targets(backend: str) -> None:
    rng = np.random.default_rng(11)
    logits, target = rng.standard_normal((40, 4)), rng.choice([0, 1, 3], 40)
    probs = softmax(logits)
    # scikit-learn gives nan when a class has no targets; the others' mean is more useful.
    per_class = [skm.roc_auc_score(target == c, probs[:, c]) for c in (0, 1, 3)]
    assert streamed(AUROC(), logits, target) == pytest.approx(np.mean(per_class), abs=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3, 6])
def test_top_k_accuracy_matches_sklearn(backend: str, k: int) -> None:
    rng = np.random.default_rng(5)
    scores, target = rng.standard_normal((50, 5)), rng.integers(0, 5, 50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns that k >= classes is a perfect score
        expected = skm.top_k_accuracy_score(target, scores, k=k, labels=range(5))
    assert streamed(TopKAccuracy(k), scores, target) == pytest.approx(expected, abs=1e-12)


def test_top_k_accuracy_breaks_ties_as_sklearn(backend: str) -> None:
    rng = np.random.default_rng(12)
    scores, target = rng.integers(0, 3, (60, 5)).astype(np.float64), rng.integers(0, 5, 60)
    for k in (1, 2, 3):
        expected = skm.top_k_accuracy_score(target, scores, k=k, labels=range(5))
        assert streamed(TopKAccuracy(k), scores, target) == pytest.approx(expected, abs=1e-12)


def test_top_k_accuracy_on_sequences_skips_ignored_targets(backend: str) -> None:
    rng = np.random.default_rng(6)
    scores, target = rng.standard_normal((30, 6, 4)), rng.integers(0, 6, (30, 4))
    target[:, -1] = -100
    rows, labels = scores.transpose(0, 2, 1).reshape(-1, 6), target.reshape(-1)
    kept = labels != -100
    expected = skm.top_k_accuracy_score(labels[kept], rows[kept], k=3, labels=range(6))
    assert streamed(TopKAccuracy(3), scores, target) == pytest.approx(expected, abs=1e-12)


def test_perplexity_is_exp_of_sklearns_log_loss(backend: str) -> None:
    rng = np.random.default_rng(7)
    logits, target = rng.standard_normal((40, 6)), rng.integers(0, 6, 40)
    target[5:9] = -100
    kept = target != -100
    expected = math.exp(skm.log_loss(target[kept], softmax(logits[kept]), labels=range(6)))
    assert streamed(Perplexity(), logits, target) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("shape", [(45,), (45, 3)])
def test_regression_metrics_match_sklearn(backend: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(8)
    target = 3 * rng.standard_normal(shape) + 5  # offset: a sum of squares would cancel
    output = target + rng.standard_normal(shape)
    cases = [
        (R2Score(), skm.r2_score(target, output)),
        (MeanSquaredError(), skm.mean_squared_error(target.ravel(), output.ravel())),
        (MeanAbsoluteError(), skm.mean_absolute_error(target.ravel(), output.ravel())),
        (RootMeanSquaredError(), skm.root_mean_squared_error(target.ravel(), output.ravel())),
    ]
    for metric, expected in cases:
        assert streamed(metric, output, target) == pytest.approx(expected, rel=1e-12), metric.name


def test_r2_of_a_constant_target_column_is_sklearns(backend: str) -> None:
    target = np.stack([np.full(12, 2.0), np.full(12, 2.0), np.arange(12.0)], 1)
    output = target.copy()
    output[3, 1] += 1.0  # column 1 missed: 0; column 0 exact: 1
    output[:, 2] += 0.5
    expected = skm.r2_score(target, output)
    assert streamed(R2Score(), output, target, cuts=(5,)) == pytest.approx(expected, abs=1e-12)


def test_one_batch_and_many_batches_agree(backend: str) -> None:
    scores, target = class_data(seed=9)
    for metric in (F1Score("weighted"), AUROC(), TopKAccuracy(2), PrecisionScore("micro")):
        assert streamed(metric, scores, target, cuts=()) == streamed(metric, scores, target)
    rng = np.random.default_rng(9)
    y = rng.standard_normal((60, 2))
    whole = streamed(R2Score(), y + 0.3, y, cuts=())
    assert streamed(R2Score(), y + 0.3, y, cuts=(1, 2, 30)) == pytest.approx(whole, rel=1e-13)


def test_names_give_the_metrics_and_running_keeps_them_apart(backend: str) -> None:
    table = get_metrics(("top3_accuracy", "f1_weighted", "auroc", "r2", "rmse"))
    assert isinstance(table["top3_accuracy"], TopKAccuracy) and table["top3_accuracy"].k == 3
    assert (table["f1_weighted"].average, table["rmse"].name) == ("weighted", "rmse")
    scores, target = np.random.default_rng(10).standard_normal((60, 5)), np.arange(60) % 5
    metrics = get_metrics(("f1_macro", "auroc", "top2_accuracy", "accuracy"))
    first, second = Running(metrics), Running(metrics)
    for running, rows in ((first, slice(0, 30)), (second, slice(30, 60))):
        x, y = tw.tensor(scores[rows]), tw.tensor(target[rows])
        running.update(tw.tensor(0.5), x, y)
    result = first.result()
    x, y = scores[:30], target[:30]
    assert result["f1_macro"] == pytest.approx(skm.f1_score(y, x.argmax(1), average="macro"))
    assert result["auroc"] == pytest.approx(
        skm.roc_auc_score(y, softmax(x), multi_class="ovr"), abs=1e-12
    )
    assert result["top2_accuracy"] == pytest.approx(skm.top_k_accuracy_score(y, x, k=2))
    assert result["accuracy"] == pytest.approx(skm.accuracy_score(y, x.argmax(1)))


def test_bad_metrics_and_inputs_are_clear_errors() -> None:
    with pytest.raises(ValueError, match=r"unknown metric 'f2'; use one of .*'auroc'.*topK"):
        get_metrics(("f2",))
    with pytest.raises(ValueError, match="average must be one of"):
        F1Score("samples")
    with pytest.raises(ValueError, match="zero_division must be 0, 1 or nan"):
        RecallScore(zero_division=0.5)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        TopKAccuracy(0)
    with pytest.raises(ValueError, match=r"f1: expected class scores .*got output \(4, 2\)"):
        F1Score().update(tw.zeros(4, 2), tw.zeros(4, 3))
    metric = F1Score("binary")
    metric.update(tw.zeros(4, 3), tw.zeros(4, dtype=tw.int64))
    with pytest.raises(ValueError, match="average='binary' needs two classes, got 3"):
        metric.compute()
    with pytest.raises(ValueError, match="this batch has 4 classes, earlier batches had 3"):
        metric.update(tw.zeros(4, 4), tw.zeros(4, dtype=tw.int64))
    with pytest.raises(ValueError, match=r"r2: output \(3,\) and target \(3, 1\)"):
        R2Score().update(tw.zeros(3), tw.zeros(3, 1))


def test_fit_reports_the_new_metrics_as_sklearn_computes_them(backend: str) -> None:
    images, labels = load_digits(return_X_y=True)
    x = (images / 16.0).astype(np.float32)
    train, val = slice(0, 1200), slice(1200, None)
    names = ("accuracy", "top3_accuracy", "f1_macro", "precision_weighted", "auroc", "perplexity")
    model = MLP(64, [32], 10)
    history = fit(
        model,
        (x[train], labels[train]),
        val=(x[val], labels[val]),
        epochs=3,
        batch_size=64,
        lr=1e-2,
        metrics=names,
        seed=0,
        progress=False,
    )
    assert history["val_accuracy"][-1] > 0.85
    logits = predict(model, x[val]).double().numpy()
    y, predicted, probs = labels[val], logits.argmax(1), softmax(logits)
    expected = {
        "accuracy": skm.accuracy_score(y, predicted),
        "top3_accuracy": skm.top_k_accuracy_score(y, logits, k=3),
        "f1_macro": skm.f1_score(y, predicted, average="macro"),
        "precision_weighted": skm.precision_score(y, predicted, average="weighted"),
        "auroc": skm.roc_auc_score(y, probs, multi_class="ovr"),
        "perplexity": math.exp(skm.log_loss(y, probs)),
    }
    for name, value in expected.items():
        assert history[f"val_{name}"][-1] == pytest.approx(value, rel=1e-5), name
    assert evaluate(model, (x[val], y), metrics=names, batch_size=100) == pytest.approx(
        {"loss": history.val_loss[-1], **{n: history[f"val_{n}"][-1] for n in names}}, rel=1e-5
    )
