"""``LearningRateMonitor``: the learning rate of each parameter group, per epoch or step."""

from __future__ import annotations

from typing import Any

from tensorweaver.training.callbacks.base import Callback, RunState


class LearningRateMonitor(Callback):
    """Record the optimizer's learning rates as training uses them.

    ``logging_interval="epoch"`` records each group's rate at the start of every epoch,
    ``"step"`` before every optimizer step. ``lrs`` maps ``"lr"`` (one group) or
    ``"lr_pg0"``, ``"lr_pg1"``, ... to the recorded values; the latest ones are also put in
    ``state.logs`` at each epoch's end, so callbacks after this one (``CSVLogger``) log them.
    """

    def __init__(self, logging_interval: str = "epoch") -> None:
        if logging_interval not in ("epoch", "step"):
            raise ValueError(
                "LearningRateMonitor: logging_interval must be 'epoch' or 'step', got "
                f"{logging_interval!r}"
            )
        self.logging_interval = logging_interval
        self.lrs: dict[str, list[float]] = {}

    def _record(self, state: RunState) -> None:
        if state.optimizer is None:
            return
        groups = state.optimizer.param_groups
        for i, group in enumerate(groups):
            name = "lr" if len(groups) == 1 else f"lr_pg{i}"
            self.lrs.setdefault(name, []).append(float(group["lr"]))

    def on_train_begin(self, state: RunState) -> None:
        if state.step == 0:
            self.lrs = {}

    def on_epoch_begin(self, state: RunState) -> None:
        if self.logging_interval == "epoch":
            self._record(state)

    def on_train_batch_begin(self, state: RunState) -> None:
        if self.logging_interval == "step":
            self._record(state)

    def on_epoch_end(self, state: RunState) -> None:
        state.logs.update({name: values[-1] for name, values in self.lrs.items() if values})

    def state_dict(self) -> dict[str, Any]:
        return {"lrs": self.lrs}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.lrs = {name: list(values) for name, values in state_dict["lrs"].items()}
