"""Metrics ``tw.fit`` and ``tw.evaluate`` report, accumulated on the device.

A :class:`Metric` adds each batch to its state with tensor ops (sums, confusion-matrix
counts, stored scores) and computes the epoch's value as a 0-d device tensor. Nothing is read
back per batch: :class:`Running` reads the loss and every metric in one transfer, so the device
is synchronised once per epoch. Each :class:`Running` works on fresh copies of the metrics, so
one metric object serves training and validation alike.

Conventions (as ``fit``'s losses): class scores are ``(N, C, ...)`` logits (or probabilities)
against class indices ``(N, ...)``, where targets equal to ``IGNORE_INDEX`` are skipped; a
binary output is logits shaped like its 0/1 targets (positive where the logit is above 0).
"""

from __future__ import annotations

import copy
import math
import re
from typing import Callable, Optional, Union

import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver.tensor import Tensor

Count = Union[Tensor, int]
UserMetric = Callable[[Tensor, Tensor], Tensor]

#: Class targets equal to this are skipped, as ``F.cross_entropy`` skips them.
IGNORE_INDEX = -100

_AVERAGES = ("binary", "macro", "micro", "weighted")


class Metric:
    """A metric over an epoch's batches: :meth:`update` per batch, :meth:`compute` at the end."""

    name = "metric"

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every batch."""
        raise NotImplementedError

    def update(self, output: Tensor, target: Tensor) -> None:
        """Add one batch's model output and targets."""
        raise NotImplementedError

    def compute(self) -> Union[Tensor, float]:
        """The value over the batches so far: a 0-d float64 tensor on their device (not read
        back), or ``nan`` when it is undefined."""
        raise NotImplementedError

    def fresh(self) -> Metric:
        """A copy of this metric with no batches, sharing nothing with it."""
        new = copy.copy(self)
        new.reset()
        return new


#: What ``get_metrics`` gives, as ``fit`` and ``evaluate`` name it.
MetricFn = Metric


class MeanMetric(Metric):
    """A ratio of sums: each batch gives ``(total, count)``; the value is ``finish(sum of
    totals / sum of counts)``."""

    def reset(self) -> None:
        self.total: Count = 0
        self.count: Count = 0

    def batch(self, output: Tensor, target: Tensor) -> tuple[Tensor, Count]:
        """One batch's ``(total, count)``."""
        raise NotImplementedError

    def finish(self, mean: Tensor) -> Tensor:
        """The metric from the mean of the totals (the mean itself unless overridden)."""
        return mean

    def update(self, output: Tensor, target: Tensor) -> None:
        total, count = self.batch(output, target)
        self.total = self.total + total
        self.count = self.count + count

    def compute(self) -> Union[Tensor, float]:
        if not isinstance(self.total, Tensor):
            return float("nan")
        if isinstance(self.count, Tensor):
            return self.finish(_divide(self.total.double(), self.count.double(), math.nan))
        return self.finish(self.total.double() / self.count) if self.count else float("nan")


def _divide(num: Tensor, den: Tensor, zero_division: float) -> Tensor:
    """``num / den``, and ``zero_division`` where ``den`` is 0, without a 0/0 on the device."""
    empty = den == 0
    return tw.where(empty, zero_division, num / tw.where(empty, 1.0, den))


def _class_rows(output: Tensor, target: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Class scores ``(N, C, d1, ...)`` and targets ``(N, d1, ...)`` as ``(M, C)`` scores,
    ``(M,)`` targets (ignored ones set to class 0) and the ``(M,)`` mask of kept targets."""
    classes = output.shape[1]
    scores = output.permute(0, *range(2, output.dim()), 1).reshape(-1, classes)
    target = target.reshape(-1).long()
    kept = target != IGNORE_INDEX
    return scores, tw.where(kept, target, 0), kept


def _shape_error(name: str, output: Tensor, target: Tensor) -> ValueError:
    return ValueError(
        f"{name}: expected class scores (N, C, ...) with class indices (N, ...), or logits "
        f"shaped like 0/1 targets; got output {tuple(output.shape)} and target "
        f"{tuple(target.shape)}"
    )


def accuracy(output: Tensor, target: Tensor) -> tuple[Tensor, Count]:
    """Correct predictions and counted targets: class scores ``(N, C, ...)`` against class
    indices ``(N, ...)`` (``IGNORE_INDEX`` targets skipped), or logits shaped like 0/1
    targets (positive where the logit is above 0)."""
    if output.dim() == target.dim() + 1:
        kept = target != IGNORE_INDEX
        return ((output.argmax(1) == target) & kept).sum(), kept.sum()
    if tuple(output.shape) == tuple(target.shape):
        return ((output > 0) == (target > 0.5)).sum(), output.numel()
    raise _shape_error("accuracy", output, target)


class Accuracy(MeanMetric):
    """The fraction of correct predictions (see :func:`accuracy`)."""

    name = "accuracy"

    def batch(self, output: Tensor, target: Tensor) -> tuple[Tensor, Count]:
        return accuracy(output, target)


class TopKAccuracy(MeanMetric):
    """The fraction of class targets among the ``k`` highest scores (all of them when ``k``
    is at least the number of classes), as scikit-learn's ``top_k_accuracy_score``, ties at
    the ``k``-th place included: they go to the higher class index."""

    def __init__(self, k: int = 5) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"TopKAccuracy: k must be a positive integer, got {k!r}")
        self.k = k
        self.name = f"top{k}_accuracy"
        super().__init__()

    def batch(self, output: Tensor, target: Tensor) -> tuple[Tensor, Count]:
        if output.dim() != target.dim() + 1:
            raise ValueError(
                f"{self.name}: expected class scores (N, C, ...) with class indices (N, ...), "
                f"got output {tuple(output.shape)} and target {tuple(target.shape)}"
            )
        scores, target, kept = _class_rows(output, target)
        classes = scores.shape[1]
        # topk keeps the first of equal scores; reversed columns make that the highest index.
        top = (classes - 1) - scores.flip(1).topk(min(self.k, classes), dim=1).indices
        hit = (top == target.unsqueeze(1)).any(1) & kept
        return hit.sum(), kept.sum()


class _Elementwise(MeanMetric):
    """A mean of ``error(output - target)`` over all elements."""

    def error(self, diff: Tensor) -> Tensor:
        raise NotImplementedError

    def batch(self, output: Tensor, target: Tensor) -> tuple[Tensor, Count]:
        if tuple(output.shape) != tuple(target.shape):
            raise ValueError(
                f"{self.name}: output {tuple(output.shape)} and target {tuple(target.shape)} "
                "must have the same shape"
            )
        return self.error(output.double() - target.double()).sum(), output.numel()


class MeanSquaredError(_Elementwise):
    """The mean squared error over all elements."""

    name = "mse"

    def error(self, diff: Tensor) -> Tensor:
        return diff * diff


class RootMeanSquaredError(MeanSquaredError):
    """The square root of the epoch's mean squared error over all elements (not a mean of
    per-batch roots)."""

    name = "rmse"

    def finish(self, mean: Tensor) -> Tensor:
        return mean.sqrt()


class MeanAbsoluteError(_Elementwise):
    """The mean absolute error over all elements."""

    name = "mae"

    def error(self, diff: Tensor) -> Tensor:
        return diff.abs()


class Perplexity(MeanMetric):
    """``exp`` of the mean cross-entropy per counted target: class logits ``(N, C, ...)``
    against class indices ``(N, ...)``, ``IGNORE_INDEX`` targets skipped."""

    name = "perplexity"

    def batch(self, output: Tensor, target: Tensor) -> tuple[Tensor, Count]:
        if output.dim() != target.dim() + 1:
            raise ValueError(
                f"perplexity: expected class logits (N, C, ...) with class indices (N, ...), "
                f"got output {tuple(output.shape)} and target {tuple(target.shape)}"
            )
        nll = F.cross_entropy(output.double(), target.long(), reduction="sum")
        return nll, (target != IGNORE_INDEX).sum()

    def finish(self, mean: Tensor) -> Tensor:
        return mean.exp()


class R2Score(MeanMetric):
    """The coefficient of determination, per output column (the features of ``(N, ...)``
    outputs) and averaged uniformly, as scikit-learn's ``r2_score``: a constant target column
    scores 1 when predicted exactly, else 0.

    The targets' mean and squared deviations are merged batch by batch (Chan et al.), so no
    sum of squares cancels."""

    name = "r2"

    def reset(self) -> None:
        self.n = 0
        self.mean: Optional[Tensor] = None
        self.m2: Count = 0
        self.residual: Count = 0

    def update(self, output: Tensor, target: Tensor) -> None:
        if tuple(output.shape) != tuple(target.shape) or output.dim() == 0:
            raise ValueError(
                f"r2: output {tuple(output.shape)} and target {tuple(target.shape)} must have "
                "the same shape, with a batch dimension"
            )
        rows = target.shape[0]
        y = target.double().reshape(rows, -1)
        self.residual = self.residual + ((output.double().reshape(rows, -1) - y) ** 2).sum(0)
        mean = y.mean(0)
        m2 = ((y - mean) ** 2).sum(0)
        if self.mean is None:
            self.n, self.mean, self.m2 = rows, mean, m2
            return
        n = self.n + rows
        delta = mean - self.mean
        self.mean = self.mean + delta * (rows / n)
        self.m2 = self.m2 + m2 + delta * delta * (self.n * rows / n)
        self.n = n

    def compute(self) -> Union[Tensor, float]:
        if self.mean is None:
            return float("nan")
        # A constant target column: 1 when predicted exactly, else 0 (scikit-learn's choice).
        constant = tw.where(self.residual == 0, 1.0, 0.0)
        return tw.where(self.m2 != 0, 1 - _divide(self.residual, self.m2, 0.0), constant).mean()


class _ClassCounts(Metric):
    """Precision, recall or F1 from a confusion matrix counted on the device.

    ``average``: ``"binary"`` (class 1 only; the default for logits shaped like 0/1 targets),
    ``"macro"`` (the default for class scores), ``"micro"`` or ``"weighted"`` (by each class's
    targets). As scikit-learn, classes never seen in the targets nor predicted are left out
    of the averages, and a ratio with a zero denominator is ``zero_division`` (0, 1, or
    ``nan``, which the averages then skip)."""

    label = "score"

    def __init__(self, average: Optional[str] = None, zero_division: float = 0.0) -> None:
        if average is not None and average not in _AVERAGES:
            raise ValueError(
                f"{type(self).__name__}: average must be one of {_AVERAGES} or None, got "
                f"{average!r}"
            )
        if not (zero_division in (0, 1) or math.isnan(zero_division)):
            raise ValueError(
                f"{type(self).__name__}: zero_division must be 0, 1 or nan, got {zero_division!r}"
            )
        self.average = average
        self.zero_division = float(zero_division)
        self.name = self.label if average is None else f"{self.label}_{average}"
        super().__init__()

    def reset(self) -> None:
        self.counts: Optional[Tensor] = None
        self.binary = False

    def ratio(self, tp: Tensor, true: Tensor, pred: Tensor) -> tuple[Tensor, Tensor]:
        """Numerator and denominator per class from true positives, targets and predictions."""
        raise NotImplementedError

    def update(self, output: Tensor, target: Tensor) -> None:
        if output.dim() == target.dim() + 1:
            scores, true, kept = _class_rows(output, target)
            classes, binary, pred = scores.shape[1], False, scores.argmax(1)
        elif tuple(output.shape) == tuple(target.shape):
            classes, binary = 2, True
            pred, true = (output > 0).long().reshape(-1), (target > 0.5).long().reshape(-1)
            kept = tw.ones_like(true, dtype=tw.bool)
        else:
            raise _shape_error(self.name, output, target)
        if self.counts is None:
            self.counts = tw.zeros(classes * classes, dtype=tw.int64, device=output.device)
            self.binary = binary
        elif self.counts.shape[0] != classes * classes or self.binary != binary:
            raise ValueError(
                f"{self.name}: this batch has {classes} classes"
                f"{' (binary logits)' if binary else ''}, earlier batches had "
                f"{math.isqrt(self.counts.shape[0])}; every batch must have the same classes"
            )
        self.counts = self.counts.scatter_add(0, true * classes + pred, kept.long())

    def compute(self) -> Union[Tensor, float]:
        if self.counts is None:
            return float("nan")
        classes = math.isqrt(self.counts.shape[0])
        average = self.average or ("binary" if self.binary else "macro")
        if average == "binary" and classes != 2:
            raise ValueError(
                f"{self.name}: average='binary' needs two classes, got {classes}; use "
                "'macro', 'micro' or 'weighted'"
            )
        matrix = self.counts.double().reshape(classes, classes)
        tp = (matrix * tw.eye(classes, dtype=tw.float64, device=matrix.device)).sum(1)
        true, pred = matrix.sum(1), matrix.sum(0)
        num, den = self.ratio(tp, true, pred)
        if average == "binary":
            return _divide(num[1], den[1], self.zero_division)
        if average == "micro":
            return _divide(num.sum(), den.sum(), self.zero_division)
        scores = _divide(num, den, self.zero_division)
        used = ((true + pred) > 0) & ~scores.isnan()
        weights = used.double() * (true if average == "weighted" else 1.0)
        return _divide((scores.nan_to_num() * weights).sum(), weights.sum(), math.nan)


class PrecisionScore(_ClassCounts):
    """Of the predictions of a class, the fraction that are right (see ``_ClassCounts``)."""

    label = "precision"

    def ratio(self, tp: Tensor, true: Tensor, pred: Tensor) -> tuple[Tensor, Tensor]:
        return tp, pred


class RecallScore(_ClassCounts):
    """Of the targets of a class, the fraction predicted (see ``_ClassCounts``)."""

    label = "recall"

    def ratio(self, tp: Tensor, true: Tensor, pred: Tensor) -> tuple[Tensor, Tensor]:
        return tp, true


class F1Score(_ClassCounts):
    """The harmonic mean of precision and recall, ``2 tp / (targets + predictions)`` per
    class (see ``_ClassCounts``)."""

    label = "f1"

    def ratio(self, tp: Tensor, true: Tensor, pred: Tensor) -> tuple[Tensor, Tensor]:
        return 2 * tp, true + pred


class AUROC(Metric):
    """The area under the ROC curve, ties counted half, as scikit-learn's ``roc_auc_score``:
    for logits shaped like 0/1 targets, or one class against the rest for each class of
    ``(N, C, ...)`` scores, averaged over the classes present in the targets (``macro``).

    The scores are stored on the device over the epoch. Class scores are turned into
    probabilities with a softmax when ``from_logits`` (the default), as scikit-learn expects
    probabilities. Undefined (``nan``) when the targets hold a single class."""

    name = "auroc"

    def __init__(self, from_logits: bool = True) -> None:
        self.from_logits = from_logits
        super().__init__()

    def reset(self) -> None:
        self.outputs: list[Tensor] = []
        self.targets: list[Tensor] = []

    def update(self, output: Tensor, target: Tensor) -> None:
        binary = tuple(output.shape) == tuple(target.shape)
        if not binary and output.dim() != target.dim() + 1:
            raise _shape_error("auroc", output, target)
        if self.outputs and (self.outputs[0].dim() == self.targets[0].dim()) != binary:
            raise ValueError("auroc: every batch must give binary logits, or class scores")
        self.outputs.append(output.detach())
        self.targets.append(target.detach())

    def compute(self) -> Union[Tensor, float]:
        if not self.outputs:
            return float("nan")
        output, target = tw.cat(self.outputs, 0).double(), tw.cat(self.targets, 0)
        if output.dim() == target.dim():
            scores = output.reshape(-1, 1)
            positive = (target > 0.5).reshape(-1, 1)
            negative = ~positive
        else:
            scores, target, kept = _class_rows(output, target)
            if self.from_logits:
                scores = F.softmax(scores, 1)
            is_class = target.unsqueeze(1) == tw.arange(scores.shape[1], device=scores.device)
            positive = is_class & kept.unsqueeze(1)
            negative = ~is_class & kept.unsqueeze(1)
        areas = _ranked_areas(scores, positive.double(), negative.double())
        defined = ~areas.isnan()
        return _divide(areas.nan_to_num().sum(), defined.double().sum(), math.nan)


def _ranked_areas(scores: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
    """Per column of ``(M, K)`` scores, the fraction of (positive, negative) pairs where the
    positive scores higher, ties counting half; ``nan`` for a column without both."""
    ordered, order = tw.sort(scores, dim=0, descending=True)
    # Rows with equal scores share a group; a group's negatives beat the positives ranked
    # above the group and tie with the positives inside it.
    new = tw.cat([tw.ones_like(ordered[:1]), (ordered[1:] != ordered[:-1]).double()], 0)
    group = new.cumsum(0).long() - 1
    pos = tw.zeros_like(ordered).scatter_add(0, group, positive.gather(0, order))
    neg = tw.zeros_like(ordered).scatter_add(0, group, negative.gather(0, order))
    above = pos.cumsum(0) - pos
    pairs = positive.sum(0) * negative.sum(0)
    return _divide((neg * (above + pos / 2)).sum(0), pairs, math.nan)


class _BatchMean(MeanMetric):
    """A user's ``metric(output, target) -> batch mean``, weighted by the batch's size."""

    def __init__(self, fn: UserMetric) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", type(fn).__name__)
        super().__init__()

    def batch(self, output: Tensor, target: Tensor) -> tuple[Tensor, Count]:
        n = _batch_size(target)
        return self.fn(output, target).detach() * n, n


def _batch_size(target: object) -> int:
    first = target[0] if isinstance(target, (tuple, list)) else target
    return first.shape[0] if isinstance(first, Tensor) and first.dim() else 1


#: name -> the metric it stands for; ``"topK_accuracy"`` works for every ``K``.
METRICS: dict[str, Metric] = {
    metric.name: metric
    for metric in (
        Accuracy(),
        TopKAccuracy(5),
        MeanSquaredError(),
        MeanAbsoluteError(),
        RootMeanSquaredError(),
        R2Score(),
        Perplexity(),
        AUROC(),
        *(
            cls(average)
            for cls in (PrecisionScore, RecallScore, F1Score)
            for average in (None, "macro", "micro", "weighted")
        ),
    )
}


def get_metrics(metrics: tuple[Union[str, Metric, UserMetric], ...]) -> dict[str, Metric]:
    """``{name: metric}`` for names from :data:`METRICS` (and ``"topK_accuracy"``),
    :class:`Metric` objects, and callables (named by ``__name__``) that return a batch's mean
    as a scalar tensor."""
    table: dict[str, Metric] = {}
    for metric in metrics:
        if isinstance(metric, Metric):
            table[metric.name] = metric
        elif callable(metric):
            table[getattr(metric, "__name__", type(metric).__name__)] = _BatchMean(metric)
        elif metric in METRICS:
            table[metric] = METRICS[metric]
        elif isinstance(metric, str) and re.fullmatch(r"top[1-9]\d*_accuracy", metric):
            table[metric] = TopKAccuracy(int(metric[3:-9]))
        else:
            raise ValueError(
                f"fit: unknown metric {metric!r}; use one of {sorted(METRICS)}, topK_accuracy "
                "for any K, a Metric, or a callable metric(output, target) -> scalar Tensor "
                "(the batch mean)"
            )
    return table


class Running:
    """Sums of the loss (weighted by batch size) and each metric's state over an epoch."""

    def __init__(self, metrics: dict[str, Metric]) -> None:
        self.metrics = {name: metric.fresh() for name, metric in metrics.items()}
        self.loss: Tensor | int = 0
        self.samples = 0

    def update(self, loss: Tensor, output: object, target: Tensor) -> None:
        """Add one batch; ``loss`` is its mean loss."""
        n = _batch_size(target)
        self.loss = self.loss + loss.detach() * n
        self.samples += n
        with tw.no_grad():
            for metric in self.metrics.values():
                metric.update(output, target)  # type: ignore[arg-type]

    def result(self) -> dict[str, float]:
        """``{"loss": mean loss, name: metric, ...}`` for the epoch, read in one transfer."""
        if not self.samples:
            raise ValueError("fit: the data gave no batches; check its length and batch_size")
        values = [self.loss, *(metric.compute() for metric in self.metrics.values())]
        on_device = [v for v in values if isinstance(v, Tensor)]
        host = iter(tw.stack([v.double() for v in on_device]).tolist()) if on_device else iter(())
        read = [next(host) if isinstance(v, Tensor) else float(v) for v in values]
        return {"loss": read[0] / self.samples, **dict(zip(self.metrics, read[1:]))}
