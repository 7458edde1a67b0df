"""A monitored number (``val_loss``, ``accuracy``, ...) and which direction is better."""

from __future__ import annotations

import math
import warnings

#: Metric names (after any ``val_`` prefix) that improve upwards, for ``mode="auto"``.
HIGHER_IS_BETTER = ("accuracy", "acc", "auc", "auroc", "f1", "precision", "recall", "r2")
#: ... and those that improve downwards (any name containing ``loss`` does too).
LOWER_IS_BETTER = ("mse", "mae", "rmse", "perplexity", "error", "lr")


def direction(monitor: str, mode: str, owner: str) -> str:
    """``"min"`` or ``"max"``: ``mode`` itself, or for ``"auto"`` the monitored name's."""
    if mode in ("min", "max"):
        return mode
    if mode != "auto":
        raise ValueError(f"{owner}: mode must be 'auto', 'min' or 'max', got {mode!r}")
    name = monitor[4:] if monitor.startswith("val_") else monitor
    if "loss" in name or name in LOWER_IS_BETTER:
        return "min"
    if name in HIGHER_IS_BETTER or any(name.startswith(f"{m}_") for m in HIGHER_IS_BETTER):
        return "max"
    raise ValueError(
        f"{owner}: cannot tell whether {monitor!r} should go up or down; pass mode='min' or "
        "mode='max'"
    )


class Monitor:
    """Reads ``monitor`` from a run's logs and says whether a value beats another by more
    than ``min_delta``."""

    def __init__(self, monitor: str, mode: str, min_delta: float, owner: str) -> None:
        self.monitor = monitor
        self.mode = direction(monitor, mode, owner)
        self.min_delta = abs(float(min_delta))
        self.owner = owner

    def value(self, logs: dict[str, float]) -> float | None:
        """The monitored value, or None (with a warning naming what there is) if absent."""
        value = logs.get(self.monitor)
        if value is None:
            warnings.warn(
                f"{self.owner}: {self.monitor!r} is not in the logs (they have "
                f"{sorted(logs)}); nothing is compared this time",
                RuntimeWarning,
                stacklevel=3,
            )
        return value

    def better(self, current: float, reference: float | None) -> bool:
        """Whether ``current`` improves on ``reference`` (None: nothing yet) by more than
        ``min_delta``; NaN never improves."""
        if math.isnan(current):
            return False
        if reference is None:
            return True
        if self.mode == "min":
            return current + self.min_delta < reference
        return current - self.min_delta > reference
