"""``tw.evaluate`` and ``tw.predict``: a trained model over data, without gradients."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Union

import numpy as np

import tensorweaver as tw
from tensorweaver.contract.dtypes import DType
from tensorweaver.nn.modules.module import Module
from tensorweaver.selection import Device
from tensorweaver.tensor import Tensor
from tensorweaver.training.callbacks.base import Callback, CallbackList, RunState
from tensorweaver.training.data import Data, as_batches, placement, split_batch, to_device
from tensorweaver.training.losses import LossFn, get_loss
from tensorweaver.training.metrics import MetricFn, Running, UserMetric, get_metrics


def run_eval(
    model: Module,
    batches: Iterable[Any],
    loss_fn: LossFn,
    metrics: dict[str, MetricFn],
    device: Device,
    dtype: DType,
    owner: str,
    hooks: CallbackList | None = None,
    state: RunState | None = None,
) -> dict[str, float]:
    """Mean loss and metrics of ``model`` (in eval mode, without grad) over ``batches``;
    ``hooks`` get ``on_test_batch_begin``/``end`` with ``state``."""
    begin = hooks is not None and hooks.has("on_test_batch_begin")
    end = hooks is not None and hooks.has("on_test_batch_end")
    was_training = model.training
    model.eval()
    running = Running(metrics)
    try:
        with tw.device(device), tw.no_grad():
            for batch in batches:
                if begin:
                    hooks.call("on_test_batch_begin", state)  # type: ignore[union-attr, arg-type]
                x, y = split_batch(batch, device, dtype, owner)
                output = model(x)
                batch_loss = loss_fn(output, y)
                running.update(batch_loss, output, y)
                if begin or end:
                    state.batch += 1  # type: ignore[union-attr]
                    state.batch_loss = batch_loss  # type: ignore[union-attr]
                if end:
                    hooks.call("on_test_batch_end", state)  # type: ignore[union-attr, arg-type]
    finally:
        model.train(was_training)
    return running.result()


def evaluate(
    model: Module,
    data: Data,
    *,
    loss: Union[str, LossFn] = "cross_entropy",
    metrics: tuple[Union[str, UserMetric], ...] = ("accuracy",),
    batch_size: int = 256,
    callbacks: Sequence[Callback] | None = None,
) -> dict[str, float]:
    """``{"loss": ..., metric: ...}`` of ``model`` on ``data`` (as ``fit`` takes it), on the
    model's device; the loss is the mean over samples. ``callbacks`` get ``on_test_begin``,
    ``on_test_batch_begin``/``end`` and ``on_test_end`` (whose ``state.logs`` are the
    results)."""
    device, dtype = placement(model)
    batches = as_batches(
        data,
        device=device,
        dtype=dtype,
        batch_size=batch_size,
        shuffle=False,
        seed=None,
        owner="evaluate: data",
    )
    hooks = CallbackList(callbacks, "evaluate")
    state = RunState(model)
    hooks.call("on_test_begin", state)
    state.logs = run_eval(
        model,
        batches,
        get_loss(loss),
        get_metrics(metrics),
        device,
        dtype,
        "evaluate",
        hooks,
        state,
    )
    hooks.call("on_test_end", state)
    return state.logs


def predict(
    model: Module,
    X: Union[Tensor, np.ndarray],
    batch_size: int = 256,
    *,
    callbacks: Sequence[Callback] | None = None,
) -> Any:
    """``model``'s outputs for the inputs ``X``, batch by batch (in eval mode, without grad),
    joined along dimension 0 on the model's device; a model that returns a tuple of tensors
    gets a tuple of joined tensors. ``callbacks`` get ``on_predict_begin``,
    ``on_predict_batch_begin``/``end`` and ``on_predict_end``."""
    device, dtype = placement(model)
    x = to_device(X, device, dtype)
    if x.dim() == 0:
        raise ValueError("predict: X must have a batch dimension, got a 0-d tensor")
    hooks = CallbackList(callbacks, "predict")
    state = RunState(model)
    hooks.call("on_predict_begin", state)
    was_training = model.training
    model.eval()
    outputs = []
    try:
        with tw.device(device), tw.no_grad():
            for i in range(0, x.shape[0], batch_size):
                hooks.call("on_predict_batch_begin", state)
                outputs.append(model(x[i : i + batch_size]))
                state.batch += 1
                hooks.call("on_predict_batch_end", state)
    finally:
        model.train(was_training)
    hooks.call("on_predict_end", state)
    if not outputs:
        raise ValueError("predict: X holds no samples")
    return _join(outputs)


def _join(outputs: list[Any]) -> Any:
    """The batches' outputs joined along dimension 0, position by position for tuples."""
    first = outputs[0]
    if isinstance(first, Tensor):
        return tw.cat(outputs, 0)
    if isinstance(first, (tuple, list)):
        return type(first)(_join(list(parts)) for parts in zip(*outputs))
    raise TypeError(
        f"predict: the model returned {type(first).__name__}; predict joins tensors and "
        "tuples of tensors"
    )
