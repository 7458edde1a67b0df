"""``EarlyStopping``: stop training once a monitored number stops improving (Keras' rules)."""

from __future__ import annotations

from typing import Any

from tensorweaver.tensor import Tensor
from tensorweaver.training.callbacks.base import Callback, RunState
from tensorweaver.training.callbacks.monitor import Monitor


class EarlyStopping(Callback):
    """Stop when ``monitor`` has not improved by more than ``min_delta`` for ``patience``
    epochs, as Keras' ``EarlyStopping``.

    ``mode`` ``"min"``/``"max"``, or ``"auto"`` from the name (losses and errors go down,
    accuracy-like metrics up). ``baseline``: the waiting is only reset by values that also
    beat it. Epochs before ``start_from_epoch`` are not compared. ``restore_best_weights``
    keeps a copy of the weights of the best epoch and loads it into the model when training
    ends (whether it stopped early or not); the copy is bitwise the weights that epoch ended
    with. After the run, ``best``, ``best_epoch`` (0-based) and ``stopped_epoch`` (0: did not
    stop early) tell what happened.
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        min_delta: float = 0.0,
        patience: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
        start_from_epoch: int = 0,
    ) -> None:
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 0:
            raise ValueError(
                f"EarlyStopping: patience must be a non-negative int, got {patience!r}"
            )
        self.monitor = Monitor(monitor, mode, min_delta, "EarlyStopping")
        self.patience = patience
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self._reset()

    def _reset(self) -> None:
        self.wait = 0
        self.best: float | None = None
        self.best_epoch = 0
        self.stopped_epoch = 0
        self.best_weights: dict[str, Tensor] | None = None

    def on_train_begin(self, state: RunState) -> None:
        if state.step == 0:  # a resumed run keeps what it had
            self._reset()

    def on_epoch_end(self, state: RunState) -> None:
        current = self.monitor.value(state.logs)
        if current is None or state.epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            # As Keras: until something improves, the first compared epoch is the best.
            self._keep(state)
        self.wait += 1
        if self.monitor.better(current, self.best):
            self.best = current
            self._keep(state)
            if self.baseline is None or self.monitor.better(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and state.epoch > 0:
            self.stopped_epoch = state.epoch
            state.stop_training = True

    def _keep(self, state: RunState) -> None:
        self.best_epoch = state.epoch
        if self.restore_best_weights:
            self.best_weights = {k: v.clone() for k, v in state.model.state_dict().items()}

    def on_train_end(self, state: RunState) -> None:
        if self.restore_best_weights and self.best_weights is not None:
            state.model.load_state_dict(self.best_weights)

    def state_dict(self) -> dict[str, Any]:
        return {
            "wait": self.wait,
            "best": self.best,
            "best_epoch": self.best_epoch,
            "stopped_epoch": self.stopped_epoch,
            "best_weights": self.best_weights,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.wait = state_dict["wait"]
        self.best = state_dict["best"]
        self.best_epoch = state_dict["best_epoch"]
        self.stopped_epoch = state_dict["stopped_epoch"]
        self.best_weights = state_dict["best_weights"]
