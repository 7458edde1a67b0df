"""``tw.fit``: train a model on data in one call, on any backend."""

from __future__ import annotations

import contextlib
import datetime
import os
import time
from collections.abc import Iterable, Sequence
from typing import Any, Union

import tensorweaver as tw
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.utils.clip_grad import clip_grads_with_norm_, total_norm
from tensorweaver.optim.optimizer import Optimizer
from tensorweaver.selection import Device
from tensorweaver.tensor import Tensor
from tensorweaver.training.callbacks.base import Callback, CallbackList, RunState
from tensorweaver.training.checkpoint import Parts, RunCheckpoint
from tensorweaver.training.data import (
    Data,
    as_batches,
    placement,
    split_batch,
    split_off,
    with_weights,
)
from tensorweaver.training.evaluate import run_eval
from tensorweaver.training.history import History
from tensorweaver.training.losses import LossFn, WeightedLossFn, get_loss, get_weighted_loss
from tensorweaver.training.metrics import MetricFn, Running, UserMetric, get_metrics
from tensorweaver.training.optimizers import get_optimizer
from tensorweaver.training.precision import Precision
from tensorweaver.training.progress import Progress
from tensorweaver.training.schedules import Schedule, Stepper


def fit(
    model: Module,
    train_data: Data,
    *,
    loss: Union[str, LossFn] = "cross_entropy",
    optimizer: Union[str, Optimizer] = "adamw",
    epochs: int = 1,
    batch_size: int = 32,
    lr: float = 1e-3,
    schedule: Schedule = None,
    clip: float | None = None,
    val: Data | None = None,
    validation_split: float | None = None,
    metrics: tuple[Union[str, UserMetric], ...] = ("accuracy",),
    device: Union[str, Device, None] = None,
    precision: str | None = None,
    seed: int | None = None,
    progress: bool = True,
    shuffle: bool = True,
    max_steps: int | None = None,
    accumulate: int = 1,
    callbacks: Sequence[Callback] | None = None,
    checkpoint_dir: Union[str, os.PathLike[str], None] = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
    sample_weight: Any | None = None,
    class_weight: dict[int, float] | None = None,
    max_time: Union[float, datetime.timedelta, None] = None,
    eval_every: int | None = None,
    compile: bool = False,  # noqa: A002  (the name tw.compile's users know)
) -> History:
    """Train ``model`` on ``train_data`` for ``epochs`` epochs and return its :class:`History`.

    ``train_data`` (and ``val``) is an ``(inputs, targets)`` pair of tensors or NumPy arrays,
    a ``Dataset`` of such pairs, or a ``DataLoader`` (which then keeps its own batch size and
    order). ``loss`` is a name (``mse``, ``mae``, ``huber``, ``cross_entropy``, ``bce`` with
    logits) or ``loss(output, targets) -> scalar``; ``optimizer`` a name (``sgd``, ``adam``,
    ``adamw``, ``rmsprop``, ``adagrad``, ``nadam``, ``radam``, built with ``lr``) or an
    ``Optimizer``. ``schedule`` is ``"cosine"``, ``"onecycle"``, an ``LRScheduler`` or a
    factory ``f(optimizer)``. ``clip`` caps the gradients' total 2-norm. ``metrics`` are
    names (``accuracy``, ``mse``, ``mae``) or ``metric(output, targets) -> batch mean``.
    ``device`` moves the model there (default: where it is); ``precision`` is ``"fp32"`` or
    ``"fp64"`` (the model is cast) or ``"bf16"``, ``"fp16"`` (with loss scaling), ``"tf32"``
    (mixed precision through ``tw.autocast``), where the device can do it. ``seed`` seeds
    TensorWeaver's generator and the shuffling.

    ``validation_split`` holds out the last fraction of ``train_data`` (a pair or a
    ``TensorDataset``; before shuffling) as ``val``, as Keras does.
    ``max_steps`` ends the run cleanly after that many optimizer steps (the epoch is closed
    with its validation), and a named schedule then spans ``max_steps`` steps.
    ``max_time`` (seconds or a ``timedelta``) ends it the same way after the step during
    which that much time has passed since this call began (a resumed run counts its own
    time only). A run ended by either, before its last epoch's end, is checkpointed at that
    step as a run to continue: ``resume=True`` with a larger limit (or none) goes on from
    there bit for bit as if it had never stopped (the History it returns then lacks the
    closed part-epoch the stopped call's had); with the same ``max_steps`` it returns at once.
    ``accumulate`` N sums the gradients of N batches (each loss divided by N) into one
    optimizer step, the last of an epoch taking what is left; steps, schedules,
    ``checkpoint_every`` and ``max_steps`` count optimizer steps, callbacks' batch hooks
    batches.

    ``sample_weight`` (one weight per sample of ``train_data``, a pair or a
    ``TensorDataset``; shuffled with it) or ``class_weight`` (``{class: weight}`` for
    integer class targets, a class not named weighing 1) weights each sample's training
    loss as Keras does: the batch's loss is the mean over its samples of loss times weight
    (divided by the batch size, not by the weights' sum), and that weighted loss is the
    logged training loss. The loss must then be a name or a ``tw.nn`` loss layer (it is
    computed per sample with ``reduction="none"``); ``class_weight`` needs a classification
    loss (cross_entropy, nll, multi_margin). With ``validation_split`` the weights of the
    held-out samples are dropped: validation loss and all metrics are unweighted.

    ``eval_every`` N validates on ``val`` after every N-th optimizer step (counted over the
    whole run, so a resumed run keeps the schedule) too, besides at each epoch's end;
    :attr:`History.step_evals` records them with their step, and callbacks'
    ``on_validation_end`` sees them in ``state.logs`` (its ``val_*`` entries).

    ``compile=True`` runs each batch's forward, backward and optimizer step through
    :func:`tw.compile <tensorweaver.compile>`: from the fourth batch on (the first steps
    trace) they replay as one recorded graph, with the same results as without it (bit for
    bit on NumPy; within rounding where the backend compiles the graph, as torch does).
    The metrics, the schedule and the callbacks run as without it, between replays. A
    step that reads values into Python (a loss scaler's check for inf) runs eagerly, with
    a warning.

    ``callbacks`` (:mod:`tensorweaver.training.callbacks`) are called at the run's moments
    with its :class:`RunState`; one may stop the run (``EarlyStopping``).

    ``checkpoint_dir`` makes the run resumable: a checkpoint of everything it needs (model,
    optimizer, scheduler, loss scaler, random streams, position, History, callbacks) is
    written there atomically at each epoch's end, every ``checkpoint_every`` optimizer steps
    if given, at the end, and on Ctrl-C (after the current step). ``resume=True`` continues
    the run from its checkpoint (if there is one; else it starts) at the next batch, and
    ends with the weights an uninterrupted run ends with, bit for bit; resuming a finished
    run loads its final weights and returns its History. The model and data must be those
    of the run. With ``checkpoint_dir`` the backends' random streams are reseeded from the
    run's seed at every batch (:mod:`tensorweaver.training.checkpoint.streams`), so dropout
    draws other masks than the same run without it.

    The model's training mode is restored at the end. The device is synchronised once per
    epoch (for the logged numbers), not per batch.
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"fit: epochs must be a positive integer, got {epochs!r}")
    if clip is not None and not clip > 0:
        raise ValueError(f"fit: clip (the max gradient norm) must be positive, got {clip!r}")
    if resume and checkpoint_dir is None:
        raise ValueError("fit: resume=True needs the checkpoint_dir of the run to continue")
    if max_steps is not None and (
        isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1
    ):
        raise ValueError(f"fit: max_steps must be a positive integer or None, got {max_steps!r}")
    if isinstance(accumulate, bool) or not isinstance(accumulate, int) or accumulate < 1:
        raise ValueError(f"fit: accumulate must be a positive integer, got {accumulate!r}")
    if checkpoint_every is not None and checkpoint_dir is None:
        raise ValueError("fit: checkpoint_every needs a checkpoint_dir to write to")
    seconds = _seconds(max_time)
    if eval_every is not None:
        if isinstance(eval_every, bool) or not isinstance(eval_every, int) or eval_every < 1:
            raise ValueError(
                f"fit: eval_every must be a positive number of steps or None, got {eval_every!r}"
            )
        if val is None and validation_split is None:
            raise ValueError("fit: eval_every needs validation data: pass val or validation_split")
    weighted = sample_weight is not None or class_weight is not None
    weighted_loss = get_weighted_loss(loss, class_weight is not None) if weighted else None
    if weighted:
        train_data = with_weights(train_data, sample_weight, class_weight)
    if validation_split is not None:
        if val is not None:
            raise ValueError("fit: pass either val or validation_split, not both")
        train_data, val = split_off(train_data, validation_split)
    if device is not None:
        model.to(device)
    numerics = Precision(precision, placement(model)[0])
    if numerics.dtype is not None:
        model.to(numerics.dtype)
    device, dtype = placement(model)
    if seed is not None:
        tw.manual_seed(seed)
    loss_fn = get_loss(loss)
    metric_fns = get_metrics(metrics)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = get_optimizer(optimizer, params, lr)
    batches = as_batches(
        train_data,
        device=device,
        dtype=dtype,
        batch_size=batch_size,
        shuffle=shuffle,
        seed=seed,
        owner="fit: train_data",
        parts=3 if weighted else 2,
    )
    val_batches = None
    if val is not None:
        val_batches = as_batches(
            val,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
            shuffle=False,
            seed=None,
            owner="fit: val",
        )
    steps = len(batches)  # type: ignore[arg-type]
    total_steps = epochs * -(-steps // accumulate)
    if max_steps is not None:
        total_steps = min(total_steps, max_steps)
    stepper = Stepper(schedule, opt, total_steps)
    history = History(device=device.name)
    hooks = CallbackList(callbacks, "fit")
    state = RunState(model, opt, stepper.scheduler, history, epochs, steps)
    checkpoint = None
    if checkpoint_dir is not None:
        parts = Parts(
            model, opt, stepper.scheduler, numerics.scaler, history, hooks, batches, device
        )
        checkpoint = RunCheckpoint(checkpoint_dir, checkpoint_every, resume, seed, parts, state)
        if checkpoint.finished:
            return history
    run = _Run(model, params, opt, loss_fn, metric_fns, numerics, stepper, clip, device, dtype)
    run.weighted_loss = weighted_loss
    run.limit(max_steps, accumulate, seconds, total_steps=epochs * -(-steps // accumulate))
    run.eval_every = eval_every
    if compile:
        run.batch = tw.compile(run.batch)
    was_training = model.training
    bar = Progress(progress, epochs)
    interrupt = checkpoint.interrupt if checkpoint is not None else contextlib.nullcontext()
    try:
        with tw.device(device), interrupt:
            run.train(state, batches, val_batches, hooks, bar, checkpoint)
    finally:
        bar.close()
        model.train(was_training)
    return history


class _Run:
    """One training run's fixed parts, and its loop."""

    def __init__(
        self,
        model: Module,
        params: list[Any],
        optimizer: Optimizer,
        loss_fn: LossFn,
        metric_fns: dict[str, MetricFn],
        numerics: Precision,
        stepper: Stepper,
        clip: float | None,
        device: Device,
        dtype: Any,
    ) -> None:
        self.model = model
        self.params = params
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.metric_fns = metric_fns
        self.numerics = numerics
        self.stepper = stepper
        self.clip = clip
        self.device = device
        self.dtype = dtype
        self.max_steps: int | None = None
        self.accumulate = 1
        self.max_time: float | None = None
        self.deadline: float | None = None
        self.total_steps = 0
        self.limited = False  # max_steps or max_time ended the run before its end
        self.weighted_loss: WeightedLossFn | None = None  # batches are (x, y, weight)
        self.eval_every: int | None = None

    def limit(
        self, max_steps: int | None, accumulate: int, max_time: float | None, total_steps: int
    ) -> None:
        """Stop after ``max_steps`` optimizer steps or ``max_time`` seconds of training, of
        the ``total_steps`` the epochs have; step once every ``accumulate`` batches."""
        self.max_steps = max_steps
        self.accumulate = accumulate
        self.max_time = max_time
        self.total_steps = total_steps

    def _out_of_limits(self, state: RunState) -> bool:
        steps_done = self.max_steps is not None and state.step >= self.max_steps
        time_up = self.deadline is not None and time.perf_counter() >= self.deadline
        return (steps_done or time_up) and state.step < self.total_steps

    def train(
        self,
        state: RunState,
        batches: Iterable[Any],
        val_batches: Iterable[Any] | None,
        hooks: CallbackList,
        bar: Progress,
        checkpoint: RunCheckpoint | None,
    ) -> None:
        """The epochs from where ``state`` stands; callbacks see every exception."""
        if self.max_time is not None:
            self.deadline = time.perf_counter() + self.max_time
        if self.max_steps is not None and state.step >= self.max_steps:
            return  # a resumed run that had stopped at this max_steps
        try:
            hooks.call("on_train_begin", state)
            for epoch in range(state.epoch, state.epochs):
                if state.stop_training:  # a resumed run that had been stopped
                    break
                state.epoch = epoch
                self._epoch(state, batches, val_batches, hooks, bar, checkpoint)
                if state.stop_training:
                    break
            hooks.call("on_train_end", state)
            if checkpoint is not None and not self.limited:
                checkpoint.finish()
        except BaseException as exc:
            hooks.call("on_exception", state, exc)
            raise

    def _epoch(
        self,
        state: RunState,
        batches: Iterable[Any],
        val_batches: Iterable[Any] | None,
        hooks: CallbackList,
        bar: Progress,
        checkpoint: RunCheckpoint | None,
    ) -> None:
        start = time.perf_counter()
        self.model.train()
        running = Running(self.metric_fns)
        if state.batch == 0:
            hooks.call("on_epoch_begin", state)
        if checkpoint is None:
            epoch_batches = iter(batches)
        else:
            epoch_batches = checkpoint.epoch_batches(batches, running)
        batch_begin = hooks.has("on_train_batch_begin")
        batch_end = hooks.has("on_train_batch_end")
        pending = 0  # batches whose gradients wait for the optimizer step
        for batch in bar.batches(epoch_batches, state.epoch, state.steps_per_epoch, state.batch):
            if checkpoint is not None:
                checkpoint.before_batch()
            if batch_begin:
                hooks.call("on_train_batch_begin", state)
            weight = None
            if self.weighted_loss is not None:
                *batch, weight = batch
            x, y = split_batch(batch, self.device, self.dtype, "fit")
            if checkpoint is not None:
                checkpoint.check_batch(x, y)
            stepped = pending + 1 == self.accumulate or state.batch + 1 == state.steps_per_epoch
            batch_loss, output = self.batch(x, y, weight, pending == 0, stepped)
            running.update(batch_loss, output, y)
            pending += 1
            state.batch += 1
            if stepped:
                self._stepped(state)
                pending = 0
            if batch_end:
                state.batch_loss = batch_loss
                hooks.call("on_train_batch_end", state)
            if stepped:
                if self.eval_every is not None and state.step % self.eval_every == 0:
                    self._eval_at_step(state, val_batches, hooks, checkpoint)
                if not state.stop_training and self._out_of_limits(state):
                    state.stop_training = self.limited = True
                if checkpoint is not None:
                    checkpoint.after_step(running, pause=self.limited)
            if state.stop_training:
                break
        if pending:  # an epoch of unknown length, or a stop, inside an accumulation
            self._update()
            self._stepped(state)
        train = running.result()
        evaluated = None
        if val_batches is not None:
            evaluated = self._validate(val_batches, checkpoint)
        self.stepper.after_epoch((evaluated or train)["loss"])
        state.history.record(train, evaluated, time.perf_counter() - start)  # type: ignore[union-attr]
        state.logs = {**train, **{f"val_{k}": v for k, v in (evaluated or {}).items()}}
        if evaluated is not None:
            hooks.call("on_validation_end", state)
        bar.end_epoch(state.epoch, state.logs)
        hooks.call("on_epoch_end", state)
        state.batch = 0
        if checkpoint is not None and not self.limited:  # else written at the stopping step
            checkpoint.end_epoch()

    def _validate(
        self, val_batches: Iterable[Any], checkpoint: RunCheckpoint | None
    ) -> dict[str, float]:
        if checkpoint is not None:
            checkpoint.before_validation()
        return run_eval(
            self.model,
            val_batches,
            self.loss_fn,
            self.metric_fns,
            self.device,
            self.dtype,
            "fit: val",
        )

    def _eval_at_step(
        self,
        state: RunState,
        val_batches: Iterable[Any] | None,
        hooks: CallbackList,
        checkpoint: RunCheckpoint | None,
    ) -> None:
        """``eval_every``'s validation after this step, recorded with the step."""
        evaluated = self._validate(val_batches, checkpoint)  # type: ignore[arg-type]
        state.history.record_step(state.step, evaluated)  # type: ignore[union-attr]
        state.logs = {**state.logs, **{f"val_{k}": v for k, v in evaluated.items()}}
        hooks.call("on_validation_end", state)

    def batch(
        self, x: Tensor, y: Tensor, weight: Tensor | None, fresh: bool, apply: bool
    ) -> tuple[Tensor, Tensor]:
        """Add the batch ``(x, y)``'s gradients (to zeroed ones if ``fresh``), its samples'
        losses weighted by ``weight`` if given, then take the optimizer step if ``apply``;
        returns its loss and the model's output (what ``fit(compile=True)`` compiles)."""
        numerics = self.numerics
        with numerics.autocast():
            output = self.model(x)
            if weight is None:
                batch_loss = _scalar(self.loss_fn(output, y))
            else:
                batch_loss = self.weighted_loss(output, y, weight)  # type: ignore[misc]
        if fresh:
            self.optimizer.zero_grad()
        numerics.backward(batch_loss if self.accumulate == 1 else batch_loss / self.accumulate)
        if apply:
            self._update()
        return batch_loss, output

    def _update(self) -> None:
        """One optimizer step with the gradients gathered."""
        if self.clip is not None:
            self.numerics.unscale_(self.optimizer)
            # (not clip_grad_norm_: it refuses sparse gradients, as PyTorch's; fit clips them)
            grads = [p.grad for p in self.params if p.grad is not None]
            clip_grads_with_norm_(self.params, self.clip, total_norm(grads))
        self.numerics.step(self.optimizer)

    def _stepped(self, state: RunState) -> None:
        """What follows an optimizer step: the schedule, and the count."""
        self.stepper.after_batch()
        state.step += 1


def _seconds(max_time: Union[float, datetime.timedelta, None]) -> float | None:
    """``max_time`` in seconds, checked."""
    if max_time is None:
        return None
    seconds = None
    if isinstance(max_time, datetime.timedelta):
        seconds = max_time.total_seconds()
    elif isinstance(max_time, (int, float)) and not isinstance(max_time, bool):
        seconds = float(max_time)
    if seconds is None or not seconds > 0:
        raise ValueError(
            f"fit: max_time must be a positive number of seconds or a timedelta, got {max_time!r}"
        )
    return seconds


def _scalar(loss: Tensor) -> Tensor:
    if not isinstance(loss, Tensor) or loss.dim() != 0:
        got = f"shape {tuple(loss.shape)}" if isinstance(loss, Tensor) else type(loss).__name__
        raise ValueError(
            f"fit: the loss must be a scalar tensor (reduce it with .mean()), got {got}"
        )
    return loss
