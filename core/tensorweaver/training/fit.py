"""``tw.fit``: train a model on data in one call, on any backend."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Sequence
from typing import Any, Union

import tensorweaver as tw
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.utils.clip_grad import clip_grad_norm_
from tensorweaver.optim.optimizer import Optimizer
from tensorweaver.selection import Device
from tensorweaver.tensor import Tensor
from tensorweaver.training.callbacks.base import Callback, CallbackList, RunState
from tensorweaver.training.checkpoint import Parts, RunCheckpoint
from tensorweaver.training.data import Data, as_batches, placement, split_batch, split_off
from tensorweaver.training.evaluate import run_eval
from tensorweaver.training.history import History
from tensorweaver.training.losses import LossFn, get_loss
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
    ``accumulate`` N sums the gradients of N batches (each loss divided by N) into one
    optimizer step, the last of an epoch taking what is left; steps, schedules,
    ``checkpoint_every`` and ``max_steps`` count optimizer steps, callbacks' batch hooks
    batches.

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
    run.limit(max_steps, accumulate)
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

    def limit(self, max_steps: int | None, accumulate: int) -> None:
        """Stop after ``max_steps`` optimizer steps; step once every ``accumulate`` batches."""
        self.max_steps = max_steps
        self.accumulate = accumulate

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
            if checkpoint is not None:
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
            x, y = split_batch(batch, self.device, self.dtype, "fit")
            if checkpoint is not None:
                checkpoint.check_batch(x, y)
            batch_loss = self._backward(x, y, running, fresh=pending == 0)
            pending += 1
            state.batch += 1
            stepped = pending == self.accumulate or state.batch == state.steps_per_epoch
            if stepped:
                self._apply(state)
                pending = 0
            if batch_end:
                state.batch_loss = batch_loss
                hooks.call("on_train_batch_end", state)
            if stepped:
                if self.max_steps is not None and state.step >= self.max_steps:
                    state.stop_training = True
                if checkpoint is not None:
                    checkpoint.after_step(running)
            if state.stop_training:
                break
        if pending:  # an epoch of unknown length, or a stop, inside an accumulation
            self._apply(state)
        train = running.result()
        evaluated = None
        if val_batches is not None:
            if checkpoint is not None:
                checkpoint.before_validation()
            evaluated = run_eval(
                self.model,
                val_batches,
                self.loss_fn,
                self.metric_fns,
                self.device,
                self.dtype,
                "fit: val",
            )
        self.stepper.after_epoch((evaluated or train)["loss"])
        state.history.record(train, evaluated, time.perf_counter() - start)  # type: ignore[union-attr]
        state.logs = {**train, **{f"val_{k}": v for k, v in (evaluated or {}).items()}}
        if evaluated is not None:
            hooks.call("on_validation_end", state)
        bar.end_epoch(state.epoch, state.logs)
        hooks.call("on_epoch_end", state)
        state.batch = 0
        if checkpoint is not None:
            checkpoint.end_epoch()

    def _backward(self, x: Tensor, y: Tensor, running: Running, fresh: bool) -> Tensor:
        """Add the batch ``(x, y)``'s gradients (to zeroed ones if ``fresh``); returns its
        loss."""
        numerics = self.numerics
        with numerics.autocast():
            output = self.model(x)
            batch_loss = _scalar(self.loss_fn(output, y))
        if fresh:
            self.optimizer.zero_grad()
        numerics.backward(batch_loss if self.accumulate == 1 else batch_loss / self.accumulate)
        running.update(batch_loss, output, y)
        return batch_loss

    def _apply(self, state: RunState) -> None:
        """One optimizer step with the gradients gathered."""
        if self.clip is not None:
            self.numerics.unscale_(self.optimizer)
            clip_grad_norm_(self.params, self.clip)
        self.numerics.step(self.optimizer)
        self.stepper.after_batch()
        state.step += 1


def _scalar(loss: Tensor) -> Tensor:
    if not isinstance(loss, Tensor) or loss.dim() != 0:
        got = f"shape {tuple(loss.shape)}" if isinstance(loss, Tensor) else type(loss).__name__
        raise ValueError(
            f"fit: the loss must be a scalar tensor (reduce it with .mean()), got {got}"
        )
    return loss
