"""Metrics ``tw.fit`` and ``tw.evaluate`` report, accumulated on the device.

A built-in metric maps one batch's ``(output, target)`` to ``(total, count)``: a device
tensor and a count (an int, or a device tensor when it depends on the data). The epoch's value
is the sum of totals over the sum of counts. A user's callable returns the batch mean as a
scalar tensor instead; it is weighted by the batch's size. :class:`Running` reads every sum
back in one transfer, so the device is synchronised once per epoch, not once per batch.
"""

from __future__ import annotations

from typing import Callable, Union

import tensorweaver as tw
from tensorweaver.tensor import Tensor

Count = Union[Tensor, int]
MetricFn = Callable[[Tensor, Tensor], "tuple[Tensor, Count]"]
UserMetric = Callable[[Tensor, Tensor], Tensor]

#: Class targets equal to this are skipped, as ``F.cross_entropy`` skips them.
IGNORE_INDEX = -100


def accuracy(output: Tensor, target: Tensor) -> tuple[Tensor, Count]:
    """Correct predictions and counted targets: class scores ``(N, C, ...)`` against class
    indices ``(N, ...)`` (``IGNORE_INDEX`` targets skipped), or logits shaped like 0/1
    targets (positive where the logit is above 0)."""
    if output.dim() == target.dim() + 1:
        kept = target != IGNORE_INDEX
        return ((output.argmax(1) == target) & kept).sum(), kept.sum()
    if tuple(output.shape) == tuple(target.shape):
        return ((output > 0) == (target > 0.5)).sum(), output.numel()
    raise ValueError(
        f"accuracy: expected class scores (N, C, ...) with class indices (N, ...), or logits "
        f"shaped like 0/1 targets; got output {tuple(output.shape)} and target "
        f"{tuple(target.shape)}"
    )


def _elementwise(name: str, error: Callable[[Tensor], Tensor]) -> MetricFn:
    def metric(output: Tensor, target: Tensor) -> tuple[Tensor, Count]:
        if tuple(output.shape) != tuple(target.shape):
            raise ValueError(
                f"{name}: output {tuple(output.shape)} and target {tuple(target.shape)} must "
                "have the same shape"
            )
        return error(output - target).sum(), output.numel()

    metric.__name__ = name
    metric.__doc__ = f"The {name} of output against target, over all elements."
    return metric


METRICS: dict[str, MetricFn] = {
    "accuracy": accuracy,
    "mse": _elementwise("mse", lambda d: d * d),
    "mae": _elementwise("mae", lambda d: d.abs()),
}


def _batch_mean(fn: UserMetric) -> MetricFn:
    def metric(output: Tensor, target: Tensor) -> tuple[Tensor, Count]:
        n = target.shape[0] if target.dim() else 1
        return fn(output, target).detach() * n, n

    return metric


def get_metrics(metrics: tuple[Union[str, UserMetric], ...]) -> dict[str, MetricFn]:
    """``{name: metric}`` for names from :data:`METRICS` and callables (named by
    ``__name__``) that return a batch's mean as a scalar tensor."""
    table: dict[str, MetricFn] = {}
    for metric in metrics:
        if callable(metric):
            table[getattr(metric, "__name__", type(metric).__name__)] = _batch_mean(metric)
        elif metric in METRICS:
            table[metric] = METRICS[metric]
        else:
            raise ValueError(
                f"fit: unknown metric {metric!r}; use one of {sorted(METRICS)} or a callable "
                "metric(output, target) -> scalar Tensor (the batch mean)"
            )
    return table


class Running:
    """Sums of the loss (weighted by batch size) and of each metric over an epoch."""

    def __init__(self, metrics: dict[str, MetricFn]) -> None:
        self.metrics = metrics
        self.loss: Tensor | int = 0
        self.samples = 0
        self.totals: dict[str, Tensor | int] = dict.fromkeys(metrics, 0)
        self.counts: dict[str, Count] = dict.fromkeys(metrics, 0)

    def update(self, loss: Tensor, output: object, target: Tensor) -> None:
        """Add one batch; ``loss`` is its mean loss."""
        n = target.shape[0] if target.dim() else 1
        self.loss = self.loss + loss.detach() * n
        self.samples += n
        with tw.no_grad():
            for name, metric in self.metrics.items():
                total, count = metric(output, target)  # type: ignore[arg-type]
                self.totals[name] = self.totals[name] + total
                self.counts[name] = self.counts[name] + count

    def result(self) -> dict[str, float]:
        """``{"loss": mean loss, name: metric, ...}`` for the epoch, read in one transfer."""
        if not self.samples:
            raise ValueError("fit: the data gave no batches; check its length and batch_size")
        sums = [self.loss, *self.totals.values(), *self.counts.values()]
        on_device = [s for s in sums if isinstance(s, Tensor)]
        host = iter(tw.stack([s.double() for s in on_device]).tolist()) if on_device else iter(())
        values = [next(host) if isinstance(s, Tensor) else float(s) for s in sums]
        k = len(self.metrics)
        loss, totals, counts = values[0], values[1 : 1 + k], values[1 + k :]
        out = {"loss": loss / self.samples}
        for name, total, count in zip(self.metrics, totals, counts):
            out[name] = total / count if count else float("nan")
        return out
