"""What ``tw.fit`` returns: per-epoch losses and metrics, the device and the time taken."""

from __future__ import annotations

from dataclasses import dataclass, field
from os import PathLike
from typing import Any, Union


@dataclass
class History:
    """One entry per epoch in each list.

    ``metrics`` maps a metric's name to its training values and ``"val_" + name`` to its
    validation values; ``val_loss`` is empty when ``fit`` had no ``val`` data.
    ``step_evals`` holds the validations of ``fit(eval_every=N)``: ``"step"`` (the optimizer
    steps done) and ``"val_loss"``, ``"val_" + metric``, one entry per evaluation.
    """

    device: str
    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    epoch_time: list[float] = field(default_factory=list)
    step_evals: dict[str, list[float]] = field(default_factory=dict)

    @property
    def epochs(self) -> int:
        return len(self.train_loss)

    @property
    def wall_time(self) -> float:
        """Seconds spent in the epochs (training and validation), all together."""
        return sum(self.epoch_time)

    def record(self, train: dict[str, float], val: dict[str, float] | None, seconds: float) -> None:
        """Append one epoch: ``train`` and ``val`` are ``{"loss": ..., metric: ...}``."""
        self.train_loss.append(train["loss"])
        for name, value in train.items():
            if name != "loss":
                self.metrics.setdefault(name, []).append(value)
        for name, value in (val or {}).items():
            if name == "loss":
                self.val_loss.append(value)
            else:
                self.metrics.setdefault(f"val_{name}", []).append(value)
        self.epoch_time.append(seconds)

    def record_step(self, step: int, val: dict[str, float]) -> None:
        """Append the validation ``val`` (``{"loss": ..., metric: ...}``) done after
        ``step`` optimizer steps to :attr:`step_evals`."""
        self.step_evals.setdefault("step", []).append(step)
        for name, value in val.items():
            self.step_evals.setdefault(f"val_{name}", []).append(value)

    def state_dict(self) -> dict[str, Any]:
        """The recorded lists, for a checkpoint."""
        return {
            "train_loss": self.train_loss,
            "val_loss": self.val_loss,
            "metrics": self.metrics,
            "epoch_time": self.epoch_time,
            "step_evals": self.step_evals,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Continue from what :meth:`state_dict` returned (``device`` stays this one's)."""
        self.train_loss = list(state_dict["train_loss"])
        self.val_loss = list(state_dict["val_loss"])
        self.metrics = {name: list(values) for name, values in state_dict["metrics"].items()}
        self.epoch_time = list(state_dict["epoch_time"])
        evals = state_dict.get("step_evals", {})  # absent in checkpoints of older runs
        self.step_evals = {name: list(values) for name, values in evals.items()}

    def __getitem__(self, name: str) -> list[float]:
        """``"loss"`` (or ``"train_loss"``), ``"val_loss"`` or a metric's name."""
        if name in ("loss", "train_loss"):
            return self.train_loss
        if name == "val_loss":
            return self.val_loss
        if name in self.metrics:
            return self.metrics[name]
        raise KeyError(
            f"History has no {name!r}; it has loss, val_loss and {sorted(self.metrics) or 'none'}"
        )

    def plot(self, path: Union[str, PathLike[str]]) -> None:
        """Write a PNG with the losses (left) and the metrics (right) per epoch."""
        try:
            # A bare Figure draws to a file without pyplot, so no GUI backend is touched.
            from matplotlib.figure import Figure
        except ImportError as exc:
            raise ImportError(
                "History.plot needs matplotlib: pip install tensorweaver[plot]"
            ) from exc
        epochs = range(1, self.epochs + 1)
        panels = 2 if self.metrics else 1
        fig = Figure(figsize=(5 * panels, 3.5))
        axes = fig.subplots(1, panels, squeeze=False)
        losses = axes[0][0]
        losses.plot(epochs, self.train_loss, label="train")
        if self.val_loss:
            losses.plot(epochs, self.val_loss, label="val")
        losses.set(xlabel="epoch", ylabel="loss", title=f"loss ({self.device})")
        losses.legend()
        if self.metrics:
            for name, values in self.metrics.items():
                axes[0][1].plot(epochs, values, label=name)
            axes[0][1].set(xlabel="epoch", title="metrics")
            axes[0][1].legend()
        fig.tight_layout()
        fig.savefig(path, format="png")
