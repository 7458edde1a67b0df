"""``fit(checkpoint_dir=...)``: write a run's whole state, and continue a run from it.

A checkpoint is written after every ``every``-th optimizer step, at every epoch's end, at
the end of training, and when Ctrl-C stops the run (at the next step boundary, see
:mod:`.interrupt`). It holds the model, optimizer, scheduler and loss scaler states, the
random streams (:mod:`.streams`), the position (epoch, batches done in it, steps), the
epoch's running loss and metric sums, the History, the last logs and each callback's state.

Resuming mid-epoch puts the data-order generators back in their state at the epoch's start,
draws the epoch's order again and skips the batches already trained on (they are loaded,
not trained on: a data pipeline's own draws are repeated too), then restores the streams'
states at the checkpoint. The run then continues with the next batch and ends bit-identical
to one that was never interrupted.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tensorweaver.amp import GradScaler
from tensorweaver.nn.modules.module import Module
from tensorweaver.optim.lr_scheduler import LRScheduler
from tensorweaver.optim.optimizer import Optimizer
from tensorweaver.selection import Device
from tensorweaver.tensor import Tensor
from tensorweaver.training.callbacks.base import CallbackList, RunState
from tensorweaver.training.checkpoint import signature, store, streams
from tensorweaver.training.checkpoint.interrupt import DeferredInterrupt
from tensorweaver.training.checkpoint.running import load_running_state, running_state
from tensorweaver.training.history import History
from tensorweaver.utils.data.sampler import seed_from


@dataclass
class Parts:
    """Everything of a run whose state a checkpoint holds."""

    model: Module
    optimizer: Optimizer
    scheduler: LRScheduler | None
    scaler: GradScaler | None
    history: History
    callbacks: CallbackList
    loader: Any
    device: Device


class RunCheckpoint:
    """The checkpoints of one ``fit`` call in ``directory``; see the module."""

    def __init__(
        self,
        directory: Any,
        every: int | None,
        resume: bool,
        seed: int | None,
        parts: Parts,
        state: RunState,
    ) -> None:
        if every is not None and (
            isinstance(every, bool) or not isinstance(every, int) or every < 1
        ):
            raise ValueError(
                f"fit: checkpoint_every must be a positive number of steps or None, got {every!r}"
            )
        self.directory = os.fspath(directory)
        self.where = repr(store.path_in(self.directory))
        self.every = every
        self.parts = parts
        self.state = state
        self.generators = streams.host_generators(parts.loader)
        self.data = signature.data_signature(parts.loader, len(self.generators))
        self.batch: dict[str, Any] | None = None  # the per-sample shapes, once seen
        self._batch_checked = False
        self.epoch_start: list[Tensor] | None = None
        self.running: dict[str, Any] | None = None  # a mid-epoch resume's sums
        self.finished = False
        self.interrupt = DeferredInterrupt()
        saved = store.read(self.directory, parts.device)
        if saved is not None and not resume:
            raise ValueError(
                f"fit: {self.where} holds a checkpoint of an earlier run; pass resume=True to "
                "continue it, or choose another checkpoint_dir (or remove it) to start over"
            )
        if saved is None:
            self.seed = seed_from(None) if seed is None else seed
        else:
            self._restore(saved)

    # -- resuming ---------------------------------------------------------------------

    def _restore(self, saved: dict[str, Any]) -> None:
        parts, state = self.parts, self.state
        sig = saved["signature"]
        signature.check_model(sig["model"], parts.model, self.where)
        signature.check_same("data", sig["data"], self.data, self.where)
        for name, part in (("scheduler", parts.scheduler), ("scaler", parts.scaler)):
            if (part is None) != (saved[name] is None):
                had = "had" if saved[name] is not None else "had no"
                raise ValueError(
                    f"fit: cannot resume from {self.where}: the run {had} a {name}, this call "
                    f"{'has' if part is not None else 'has none'}; pass the schedule and "
                    "precision the run started with"
                )
        parts.model.load_state_dict(saved["model"])
        parts.optimizer.load_state_dict(saved["optimizer"])
        if parts.scheduler is not None:
            parts.scheduler.load_state_dict(saved["scheduler"])
        if parts.scaler is not None:
            parts.scaler.load_state_dict(saved["scaler"])
        parts.history.load_state_dict(saved["history"])
        parts.callbacks.load_state_dict(saved["callbacks"], self.where)
        rng = saved["rng"]
        self.seed = rng["seed"]
        self.epoch_start = rng["epoch_start"]
        streams.restore(self.generators, rng["current"])
        position = saved["position"]
        state.epoch, state.batch, state.step = (
            position["epoch"],
            position["batch"],
            position["step"],
        )
        state.stop_training = position["stop_training"]
        state.logs = dict(saved["logs"])
        self.running = saved["running"]
        self.batch = sig["batch"]
        self.finished = saved["finished"]

    def epoch_batches(self, loader: Any, running: Any) -> Iterator[Any]:
        """The current epoch's batches from where the run stands (``state.batch`` done);
        a mid-epoch resume also gets its running sums back into ``running``."""
        if self.running is None:
            self.epoch_start = streams.snapshot(self.generators)
            return iter(loader)
        current = streams.snapshot(self.generators)
        streams.restore(self.generators, self.epoch_start)  # type: ignore[arg-type]
        batches = iter(loader)
        for done in range(self.state.batch):
            if next(batches, None) is None:
                raise ValueError(
                    f"fit: cannot resume from {self.where}: the data gave {done} batches this "
                    f"epoch, the run had done {self.state.batch}; resume with the data the run "
                    "started with"
                )
        streams.restore(self.generators, current)
        load_running_state(running, self.running)
        self.running = None
        return batches

    def check_batch(self, x: Tensor, y: Tensor) -> None:
        """Compare the first batch this process trains on with the run's (once)."""
        if self._batch_checked:
            return
        self._batch_checked = True
        mine = signature.batch_signature(x, y)
        if self.batch is None:
            self.batch = mine
        else:
            signature.check_same("batch", self.batch, mine, self.where)

    # -- the random streams of the backends -------------------------------------------

    def before_batch(self) -> None:
        state = self.state
        streams.reseed_backends(self.seed, state.step, state.batch, streams.TRAIN)

    def before_validation(self) -> None:
        streams.reseed_backends(self.seed, self.state.step, 0, streams.VALIDATION)

    # -- writing ----------------------------------------------------------------------

    def after_step(self, running: Any, pause: bool = False) -> None:
        """After an optimizer step: write a checkpoint every ``every`` steps, or now if
        Ctrl-C asked to stop or ``pause`` (``max_steps``/``max_time`` ran out: the
        checkpoint is then of a run to continue, at this step, not of a stopped one)."""
        due = self.every is not None and self.state.step % self.every == 0
        if due or pause or self.interrupt.requested:
            self._write(running, pause)
        self._stop_if_interrupted()

    def end_epoch(self) -> None:
        """Write the checkpoint of a finished epoch."""
        self._write(None)
        self._stop_if_interrupted()

    def finish(self) -> None:
        """Write the checkpoint of a finished run."""
        self.finished = True
        self._write(None)

    def _stop_if_interrupted(self) -> None:
        if self.interrupt.requested:
            raise KeyboardInterrupt(f"fit: interrupted; the run's checkpoint is {self.where}")

    def _write(self, running: Any, pause: bool = False) -> None:
        parts, state = self.parts, self.state
        inside = running is not None
        store.write(
            self.directory,
            {
                "finished": self.finished,
                "position": {
                    "epoch": state.epoch if inside else state.epoch + 1,
                    "batch": state.batch if inside else 0,
                    "step": state.step,
                    "stop_training": state.stop_training and not pause,
                },
                "running": running_state(running) if inside else None,
                "model": parts.model.state_dict(),
                "optimizer": parts.optimizer.state_dict(),
                "scheduler": None if parts.scheduler is None else parts.scheduler.state_dict(),
                "scaler": None if parts.scaler is None else parts.scaler.state_dict(),
                "rng": {
                    "seed": self.seed,
                    "epoch_start": self.epoch_start if inside else None,
                    "current": streams.snapshot(self.generators),
                },
                "history": parts.history.state_dict(),
                "logs": dict(state.logs),
                "callbacks": parts.callbacks.state_dict(),
                "signature": {
                    "model": signature.model_signature(parts.model),
                    "data": self.data,
                    "batch": self.batch,
                },
            },
        )
