"""The callback protocol of ``tw.fit``, ``tw.evaluate`` and ``tw.predict``.

A :class:`Callback` overrides the hooks it needs; each hook gets the run's :class:`RunState`.
Hooks run in the order the callbacks were given, so a callback sees what earlier ones wrote
into ``state.logs``. :class:`CallbackList` calls only the hooks a callback overrides, so a run
without callbacks, or with epoch-level ones only, pays nothing per batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tensorweaver.nn.modules.module import Module
from tensorweaver.optim.lr_scheduler import LRScheduler
from tensorweaver.optim.optimizer import Optimizer
from tensorweaver.tensor import Tensor
from tensorweaver.training.history import History


@dataclass
class RunState:
    """What a callback sees of a run, and ``stop_training``, the one thing it may set.

    ``epoch`` counts from 0; ``batch`` is the number of batches done in the current epoch
    (or evaluation/prediction pass); ``step`` the optimizer steps done in the whole run.
    ``logs`` holds the last finished epoch's numbers (``loss``, metrics, ``val_*``), floats
    read once per epoch; ``batch_loss`` is the last batch's loss as a device tensor (reading
    it with ``.item()`` synchronises the device). Setting ``stop_training`` ends the run
    cleanly after the current batch: the epoch is closed (validation, ``on_epoch_end``,
    checkpoint) and no other starts.
    """

    model: Module
    optimizer: Optimizer | None = None
    scheduler: LRScheduler | None = None
    history: History | None = None
    epochs: int = 0
    steps_per_epoch: int | None = None
    epoch: int = 0
    batch: int = 0
    step: int = 0
    logs: dict[str, float] = field(default_factory=dict)
    batch_loss: Tensor | None = None
    stop_training: bool = False


class Callback:
    """Base class of callbacks: every hook does nothing until overridden.

    A callback with state to keep across a resumed run (``fit(checkpoint_dir=...)``)
    returns it from :meth:`state_dict` (tensors, numbers, strings, lists and dicts) and takes
    it back in :meth:`load_state_dict`, which runs before ``on_train_begin``.
    """

    def on_train_begin(self, state: RunState) -> None:
        """Before the first epoch (also when a run resumes)."""

    def on_train_end(self, state: RunState) -> None:
        """After the last epoch, or once a callback stopped the run."""

    def on_epoch_begin(self, state: RunState) -> None:
        """Before an epoch's first batch (not again when a run resumes inside the epoch)."""

    def on_epoch_end(self, state: RunState) -> None:
        """After an epoch and its validation; ``state.logs`` has the epoch's numbers."""

    def on_train_batch_begin(self, state: RunState) -> None:
        """Before a training batch; ``state.batch`` batches of the epoch are done."""

    def on_train_batch_end(self, state: RunState) -> None:
        """After a training batch's optimizer step; ``state.batch_loss`` is its loss."""

    def on_validation_end(self, state: RunState) -> None:
        """After ``fit`` validated; ``state.logs`` has the ``val_*`` numbers."""

    def on_exception(self, state: RunState, exception: BaseException) -> None:
        """When an exception (``KeyboardInterrupt`` included) leaves the run; it is then
        raised again."""

    def on_test_begin(self, state: RunState) -> None:
        """Before ``tw.evaluate``'s first batch."""

    def on_test_batch_begin(self, state: RunState) -> None:
        """Before one of ``tw.evaluate``'s batches."""

    def on_test_batch_end(self, state: RunState) -> None:
        """After one of ``tw.evaluate``'s batches."""

    def on_test_end(self, state: RunState) -> None:
        """After ``tw.evaluate``; ``state.logs`` has its results."""

    def on_predict_begin(self, state: RunState) -> None:
        """Before ``tw.predict``'s first batch."""

    def on_predict_batch_begin(self, state: RunState) -> None:
        """Before one of ``tw.predict``'s batches."""

    def on_predict_batch_end(self, state: RunState) -> None:
        """After one of ``tw.predict``'s batches."""

    def on_predict_end(self, state: RunState) -> None:
        """After ``tw.predict``."""

    def state_dict(self) -> dict[str, Any]:
        """What this callback needs to continue a resumed run (nothing, by default)."""
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Continue from what :meth:`state_dict` returned."""


#: Every hook's name.
HOOKS = tuple(name for name in vars(Callback) if name.startswith("on_"))


def _overrides(callback: Callback, hook: str) -> bool:
    return hook in vars(callback) or getattr(type(callback), hook) is not getattr(Callback, hook)


class CallbackList:
    """Calls a hook on every callback that implements it, in order."""

    def __init__(self, callbacks: Iterable[Callback] | None, owner: str) -> None:
        self.callbacks = list(callbacks or ())
        for callback in self.callbacks:
            if not isinstance(callback, Callback):
                raise TypeError(
                    f"{owner}: callbacks must be tw.training.callbacks.Callback instances, got "
                    f"{type(callback).__name__}; wrap a function in LambdaCallback"
                )
        self._by_hook = {
            hook: [getattr(c, hook) for c in self.callbacks if _overrides(c, hook)]
            for hook in HOOKS
        }

    def has(self, hook: str) -> bool:
        """Whether any callback implements ``hook``."""
        return bool(self._by_hook[hook])

    def call(self, hook: str, state: RunState, *args: Any) -> None:
        for method in self._by_hook[hook]:
            method(state, *args)

    def state_dict(self) -> list[dict[str, Any]]:
        """Each callback's class name and state, in order."""
        return [{"class": type(c).__qualname__, "state": c.state_dict()} for c in self.callbacks]

    def load_state_dict(self, saved: list[dict[str, Any]], where: str) -> None:
        """Give each callback its saved state; the callbacks must be those of the run."""
        mine = [type(c).__qualname__ for c in self.callbacks]
        theirs = [entry["class"] for entry in saved]
        if mine != theirs:
            raise ValueError(
                f"fit: cannot resume from {where}: the run had the callbacks {theirs}, this call "
                f"passes {mine}; pass the same callbacks, in the same order"
            )
        for callback, entry in zip(self.callbacks, saved):
            callback.load_state_dict(entry["state"])
