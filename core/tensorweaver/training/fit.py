"""``tw.fit``: train a model on data in one call, on any backend."""

from __future__ import annotations

import time
from typing import Union

import tensorweaver as tw
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.utils.clip_grad import clip_grad_norm_
from tensorweaver.optim.optimizer import Optimizer
from tensorweaver.selection import Device
from tensorweaver.tensor import Tensor
from tensorweaver.training.data import Data, as_batches, placement, split_batch
from tensorweaver.training.evaluate import run_eval
from tensorweaver.training.history import History
from tensorweaver.training.losses import LossFn, get_loss
from tensorweaver.training.metrics import Running, UserMetric, get_metrics
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
    metrics: tuple[Union[str, UserMetric], ...] = ("accuracy",),
    device: Union[str, Device, None] = None,
    precision: str | None = None,
    seed: int | None = None,
    progress: bool = True,
    shuffle: bool = True,
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

    The model's training mode is restored at the end. The device is synchronised once per
    epoch (for the logged numbers), not per batch.
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"fit: epochs must be a positive integer, got {epochs!r}")
    if clip is not None and not clip > 0:
        raise ValueError(f"fit: clip (the max gradient norm) must be positive, got {clip!r}")
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
    stepper = Stepper(schedule, opt, epochs * steps)
    history = History(device=device.name)
    bar = Progress(progress, epochs)
    was_training = model.training
    try:
        with tw.device(device):
            for epoch in range(epochs):
                start = time.perf_counter()
                model.train()
                running = Running(metric_fns)
                for batch in bar.batches(batches, epoch, steps):
                    x, y = split_batch(batch, device, dtype, "fit")
                    with numerics.autocast():
                        output = model(x)
                        batch_loss = _scalar(loss_fn(output, y))
                    opt.zero_grad()
                    numerics.backward(batch_loss)
                    if clip is not None:
                        numerics.unscale_(opt)
                        clip_grad_norm_(params, clip)
                    numerics.step(opt)
                    stepper.after_batch()
                    running.update(batch_loss, output, y)
                train = running.result()
                evaluated = None
                if val_batches is not None:
                    evaluated = run_eval(
                        model, val_batches, loss_fn, metric_fns, device, dtype, "fit: val"
                    )
                stepper.after_epoch((evaluated or train)["loss"])
                history.record(train, evaluated, time.perf_counter() - start)
                shown = {**train, **{f"val_{k}": v for k, v in (evaluated or {}).items()}}
                bar.end_epoch(epoch, shown)
    finally:
        bar.close()
        model.train(was_training)
    return history


def _scalar(loss: Tensor) -> Tensor:
    if not isinstance(loss, Tensor) or loss.dim() != 0:
        got = f"shape {tuple(loss.shape)}" if isinstance(loss, Tensor) else type(loss).__name__
        raise ValueError(
            f"fit: the loss must be a scalar tensor (reduce it with .mean()), got {got}"
        )
    return loss
