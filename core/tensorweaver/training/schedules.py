"""Learning-rate schedules for ``tw.fit``, and when each one is stepped.

A schedule ``fit`` builds from a name spans the whole run and is stepped after every batch.
A scheduler the user gives (or a factory ``f(optimizer) -> scheduler`` builds) follows
PyTorch's conventions: ``OneCycleLR`` steps after every batch, ``ReduceLROnPlateau`` after
every epoch with the validation loss (the training loss without ``val``), any other
scheduler after every epoch.
"""

from __future__ import annotations

from typing import Callable, Union

from tensorweaver.optim.lr_scheduler import (
    CosineAnnealingLR,
    LRScheduler,
    OneCycleLR,
    ReduceLROnPlateau,
)
from tensorweaver.optim.optimizer import Optimizer

Schedule = Union[str, LRScheduler, Callable[[Optimizer], LRScheduler], None]


def _cosine(optimizer: Optimizer, total_steps: int) -> LRScheduler:
    return CosineAnnealingLR(optimizer, T_max=total_steps)


def _onecycle(optimizer: Optimizer, total_steps: int) -> LRScheduler:
    peaks = [group["lr"] for group in optimizer.param_groups]
    # OneCycleLR cycles the momentum (or Adam's beta1) by default and refuses an optimizer
    # that has neither (Adagrad, Adadelta): there it cycles the learning rate alone.
    cycles = "momentum" in optimizer.defaults or "betas" in optimizer.defaults
    return OneCycleLR(optimizer, max_lr=peaks, total_steps=total_steps, cycle_momentum=cycles)


#: name -> ``build(optimizer, total_steps)``; the optimizer's lr is the peak.
SCHEDULES: dict[str, Callable[[Optimizer, int], LRScheduler]] = {
    "cosine": _cosine,
    "onecycle": _onecycle,
}


class Stepper:
    """Steps a scheduler at the right moments (see the module's docs)."""

    def __init__(self, schedule: Schedule, optimizer: Optimizer, total_steps: int) -> None:
        self.per_batch = False
        if schedule is None:
            self.scheduler = None
            return
        if isinstance(schedule, str):
            if schedule not in SCHEDULES:
                raise ValueError(
                    f"fit: unknown schedule {schedule!r}; use one of {sorted(SCHEDULES)}, an "
                    "LRScheduler or a factory f(optimizer) -> LRScheduler"
                )
            self.scheduler = SCHEDULES[schedule](optimizer, total_steps)
            self.per_batch = True
            return
        scheduler = schedule if isinstance(schedule, LRScheduler) else schedule(optimizer)
        if not isinstance(scheduler, LRScheduler):
            raise TypeError(
                f"fit: the schedule factory returned {type(scheduler).__name__}, not an LRScheduler"
            )
        if scheduler.optimizer is not optimizer:
            raise ValueError(
                "fit: the scheduler drives another optimizer than the one fit trains with; pass "
                "that optimizer as optimizer=, or give a factory f(optimizer) -> scheduler"
            )
        self.scheduler = scheduler
        self.per_batch = isinstance(scheduler, OneCycleLR)

    def after_batch(self) -> None:
        if self.per_batch:
            self.scheduler.step()  # type: ignore[union-attr]

    def after_epoch(self, monitored_loss: float) -> None:
        if self.scheduler is None or self.per_batch:
            return
        if isinstance(self.scheduler, ReduceLROnPlateau):
            self.scheduler.step(monitored_loss)
        else:
            self.scheduler.step()
