"""``ModelCheckpoint``: save the model every N steps or epochs, or its best versions."""

from __future__ import annotations

import os
from typing import Any, Union

from tensorweaver.serialization import save
from tensorweaver.training.callbacks.base import Callback, RunState
from tensorweaver.training.callbacks.monitor import Monitor

PathLike = Union[str, "os.PathLike[str]"]


def _count(value: Any, name: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"ModelCheckpoint: {name} must be a positive int or None, got {value!r}")
    return value


class ModelCheckpoint(Callback):
    """Write the model with ``tw.save`` (atomically, with checksums) into ``dirpath``.

    When: at the end of every ``every_n_epochs``-th epoch and/or after every
    ``every_n_steps``-th optimizer step (default: every epoch). ``filename`` is formatted
    with ``epoch`` (counting from 1), ``step`` (steps done) and the last epoch's logs
    (``"{epoch}-{val_loss:.3f}"``); ``.safetensors`` is added.

    Which files stay: without ``monitor``, every save, or the ``save_top_k`` latest. With
    ``monitor`` (``mode`` as in :class:`EarlyStopping`), a save happens only when the value
    ranks among the ``save_top_k`` best so far (all if None), and worse files are removed;
    ``save_best_only`` saves only values better than every earlier one. ``best_model_path``
    and ``best_model_score`` name the best file. ``save_weights_only`` (default) stores
    ``model.state_dict()``; False stores the whole module (``tw.load`` rebuilds it).
    """

    def __init__(
        self,
        dirpath: PathLike,
        filename: str = "epoch={epoch}-step={step}",
        monitor: str | None = None,
        mode: str = "auto",
        save_best_only: bool = False,
        save_top_k: int | None = None,
        every_n_steps: int | None = None,
        every_n_epochs: int | None = None,
        save_weights_only: bool = True,
    ) -> None:
        if save_best_only and monitor is None:
            raise ValueError("ModelCheckpoint: save_best_only needs a monitor, e.g. 'val_loss'")
        self.dirpath = os.fspath(dirpath)
        self.filename = filename
        self.monitor = None if monitor is None else Monitor(monitor, mode, 0.0, "ModelCheckpoint")
        self.save_best_only = save_best_only
        self.save_top_k = _count(save_top_k, "save_top_k")
        self.every_n_steps = _count(every_n_steps, "every_n_steps")
        self.every_n_epochs = _count(every_n_epochs, "every_n_epochs")
        if self.every_n_steps is None and self.every_n_epochs is None:
            self.every_n_epochs = 1
        self.save_weights_only = save_weights_only
        #: ``[score, path]`` of each kept file, oldest first (score None without monitor).
        self.saved: list[list[Any]] = []
        self.best_model_score: float | None = None
        self.best_model_path: str | None = None

    def on_train_batch_end(self, state: RunState) -> None:
        if self.every_n_steps is not None and state.step % self.every_n_steps == 0:
            self._save(state)

    def on_epoch_end(self, state: RunState) -> None:
        if self.every_n_epochs is not None and (state.epoch + 1) % self.every_n_epochs == 0:
            self._save(state)

    def _save(self, state: RunState) -> None:
        score = None
        if self.monitor is not None:
            score = self.monitor.value(state.logs)
            if score is None or not self._worth_saving(score):
                return
        name = self.filename.format(epoch=state.epoch + 1, step=state.step, **state.logs)
        path = os.path.join(
            self.dirpath, name if name.endswith(".safetensors") else f"{name}.safetensors"
        )
        os.makedirs(self.dirpath, exist_ok=True)
        save(state.model.state_dict() if self.save_weights_only else state.model, path)
        self.saved = [entry for entry in self.saved if entry[1] != path] + [[score, path]]
        if self.monitor is not None and self.monitor.better(score, self.best_model_score):
            self.best_model_score, self.best_model_path = score, path
        elif self.monitor is None:
            self.best_model_path = path
        self._prune()

    def _worth_saving(self, score: float) -> bool:
        if self.save_best_only:
            return self.monitor.better(score, self.best_model_score)  # type: ignore[union-attr]
        if self.save_top_k is None or len(self.saved) < self.save_top_k:
            return True
        return self.monitor.better(score, self._ranked()[-1][0])  # type: ignore[union-attr]

    def _ranked(self) -> list[list[Any]]:
        """The kept files, best first (older first among equals)."""
        reverse = self.monitor is not None and self.monitor.mode == "max"
        return sorted(self.saved, key=lambda entry: entry[0], reverse=reverse)

    def _prune(self) -> None:
        if self.save_top_k is None or len(self.saved) <= self.save_top_k:
            return
        keep = self._ranked() if self.monitor is not None else self.saved[::-1]
        dropped = keep[self.save_top_k :]
        for _, path in dropped:
            if os.path.exists(path):
                os.remove(path)
        self.saved = [entry for entry in self.saved if entry not in dropped]

    def state_dict(self) -> dict[str, Any]:
        return {
            "saved": self.saved,
            "best_model_score": self.best_model_score,
            "best_model_path": self.best_model_path,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.saved = [list(entry) for entry in state_dict["saved"]]
        self.best_model_score = state_dict["best_model_score"]
        self.best_model_path = state_dict["best_model_path"]
