"""Callbacks of fit, evaluate and predict: the hooks and their order, stopping a run, and
the built-in callbacks (EarlyStopping, ModelCheckpoint, LearningRateMonitor, CSVLogger,
TensorBoard, LambdaCallback)."""

from __future__ import annotations

import csv
import importlib.util
import math

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver.models import MLP
from tensorweaver.training import evaluate, fit, predict
from tensorweaver.training.callbacks import (
    Callback,
    CSVLogger,
    EarlyStopping,
    LambdaCallback,
    LearningRateMonitor,
    ModelCheckpoint,
    RunState,
    TensorBoard,
)
from training_data import blobs


def _noise(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs with random labels: a model can only memorise them, so its validation loss
    soon rises, and EarlyStopping has something to stop."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 4)).astype(np.float32), rng.integers(0, 3, n)


def _weights(model: tw.nn.Module) -> dict[str, bytes]:
    return {k: v.detach().numpy().tobytes() for k, v in model.state_dict().items()}


def _fit(model, data=None, **options):
    kwargs = {"epochs": 2, "batch_size": 40, "lr": 1e-2, "progress": False, "seed": 0}
    return fit(model, blobs() if data is None else data, **{**kwargs, **options})


def test_hooks_run_in_order_with_the_run_state(backend) -> None:
    events = []

    def note(hook):
        return lambda state: events.append((hook, state.epoch, state.batch, state.step))

    hooks = [
        "on_train_begin",
        "on_epoch_begin",
        "on_train_batch_begin",
        "on_train_batch_end",
        "on_validation_end",
        "on_epoch_end",
        "on_train_end",
    ]
    _fit(
        MLP(4, [8], 3),
        val=blobs(30, seed=1),
        callbacks=[LambdaCallback(**{h: note(h) for h in hooks})],
    )
    batches = [
        event
        for epoch in range(2)
        for b in range(3)
        for event in (
            ("on_train_batch_begin", epoch, b, 3 * epoch + b),
            ("on_train_batch_end", epoch, b + 1, 3 * epoch + b + 1),
        )
    ]
    expected = [
        ("on_train_begin", 0, 0, 0),
        ("on_epoch_begin", 0, 0, 0),
        *batches[:6],
        ("on_validation_end", 0, 3, 3),
        ("on_epoch_end", 0, 3, 3),
        ("on_epoch_begin", 1, 0, 3),
        *batches[6:],
        ("on_validation_end", 1, 3, 6),
        ("on_epoch_end", 1, 3, 6),
        ("on_train_end", 1, 0, 6),
    ]
    assert events == expected


def test_logs_and_batch_loss_are_what_fit_reports(backend) -> None:
    seen = {}

    def batch_end(state: RunState) -> None:
        seen.setdefault("losses", []).append(state.batch_loss.item())

    def epoch_end(state: RunState) -> None:
        seen.setdefault("logs", []).append(dict(state.logs))
        assert state.history.epochs == state.epoch + 1
        assert state.optimizer is not None and state.model is model

    model = MLP(4, [8], 3)
    history = _fit(
        model,
        val=blobs(30, seed=1),
        callbacks=[LambdaCallback(on_train_batch_end=batch_end, on_epoch_end=epoch_end)],
    )
    assert [logs["loss"] for logs in seen["logs"]] == history.train_loss
    assert [logs["val_loss"] for logs in seen["logs"]] == history.val_loss
    assert [logs["val_accuracy"] for logs in seen["logs"]] == history["val_accuracy"]
    # The epoch's loss is the batches' losses weighted by size (40 each here).
    first = np.mean(seen["losses"][:3])
    assert math.isclose(history.train_loss[0], first, rel_tol=1e-6)


def test_a_callback_stops_the_run_after_the_current_batch(backend) -> None:
    def stop(state: RunState) -> None:
        if state.step == 2:
            state.stop_training = True

    ends = []
    history = _fit(
        MLP(4, [8], 3),
        epochs=5,
        callbacks=[
            LambdaCallback(on_train_batch_end=stop, on_epoch_end=lambda s: ends.append(s.step))
        ],
    )
    assert history.epochs == 1 and ends == [2]


def test_on_exception_sees_the_error_which_is_raised_again() -> None:
    seen = []

    def fail(state):
        raise RuntimeError("inside a batch")

    with pytest.raises(RuntimeError, match="inside a batch"):
        _fit(
            MLP(4, [8], 3),
            callbacks=[
                LambdaCallback(
                    on_train_batch_end=fail, on_exception=lambda s, e: seen.append(str(e))
                )
            ],
        )
    assert seen == ["inside a batch"]


def test_bad_callbacks_are_clear_errors() -> None:
    with pytest.raises(TypeError, match="fit: callbacks must be .*Callback instances"):
        _fit(MLP(4, [8], 3), callbacks=[lambda state: None])
    with pytest.raises(TypeError, match="unknown hook 'on_batch_end'"):
        LambdaCallback(on_batch_end=print)
    with pytest.raises(ValueError, match="cannot tell whether 'f2' should go up or down"):
        EarlyStopping(monitor="f2")
    with pytest.raises(ValueError, match="save_best_only needs a monitor"):
        ModelCheckpoint("x", save_best_only=True)


def test_evaluate_and_predict_call_their_hooks(backend) -> None:
    events = []

    class Recorder(Callback):
        def on_test_begin(self, state):
            events.append("test_begin")

        def on_test_batch_end(self, state):
            events.append(("test_batch", state.batch))

        def on_test_end(self, state):
            events.append(("test_end", dict(state.logs)))

        def on_predict_batch_end(self, state):
            events.append(("predict_batch", state.batch))

        def on_predict_end(self, state):
            events.append("predict_end")

    model = MLP(4, [8], 3)
    x, y = blobs(50)
    result = evaluate(model, (x, y), batch_size=20, callbacks=[Recorder()])
    assert events == [
        "test_begin",
        ("test_batch", 1),
        ("test_batch", 2),
        ("test_batch", 3),
        ("test_end", result),
    ]
    events.clear()
    predict(model, x, batch_size=32, callbacks=[Recorder()])
    assert events == [("predict_batch", 1), ("predict_batch", 2), "predict_end"]


# -- EarlyStopping ----------------------------------------------------------------------


def _feed(callback: EarlyStopping, values: list[float], name: str = "val_loss") -> int | None:
    """Give ``callback`` one epoch end per value; the epoch at which it stopped the run."""
    state = RunState(MLP(4, [8], 3))
    callback.on_train_begin(state)
    for epoch, value in enumerate(values):
        state.epoch, state.logs = epoch, {name: value}
        callback.on_epoch_end(state)
        if state.stop_training:
            return epoch
    return None


def test_early_stopping_follows_keras_rules() -> None:
    losses = [1.0, 0.9, 0.95, 0.91, 0.89, 0.92, 0.93]
    # No improvement at epochs 2 and 3: patience 2 is spent at epoch 3.
    assert _feed(EarlyStopping(patience=2), losses) == 3
    # An improvement must beat the best by more than min_delta: 0.89 is not one.
    stopper = EarlyStopping(patience=3, min_delta=0.05)
    assert _feed(stopper, losses) == 4 and stopper.best == 0.9 and stopper.best_epoch == 1
    # patience 0 stops at the first epoch without improvement.
    assert _feed(EarlyStopping(), losses) == 2
    # mode auto: accuracy goes up.
    accuracies = [0.5, 0.6, 0.6, 0.55, 0.7]
    assert _feed(EarlyStopping(monitor="val_accuracy", patience=2), accuracies, "val_accuracy") == 3
    assert (
        _feed(
            EarlyStopping(monitor="val_accuracy", patience=2, mode="min"),
            accuracies,
            "val_accuracy",
        )
        == 2
    )
    # A baseline not beaten lets patience run out even while the value improves.
    assert _feed(EarlyStopping(patience=2, baseline=0.5), losses) == 2
    # Nothing is compared before start_from_epoch.
    assert _feed(EarlyStopping(patience=0, start_from_epoch=3), losses) == 5
    with pytest.warns(RuntimeWarning, match="'val_loss' is not in the logs"):
        assert _feed(EarlyStopping(), [1.0], name="loss") is None


def test_early_stopping_restores_the_best_epochs_weights_bitwise(backend) -> None:
    per_epoch = []
    stopper = EarlyStopping(patience=2, restore_best_weights=True)
    model = MLP(4, [64], 3)
    history = _fit(
        model,
        _noise(60, 0),
        val=_noise(60, 1),
        epochs=40,
        batch_size=20,
        lr=3e-2,
        # Runs before the stopper: each epoch's final weights.
        callbacks=[
            LambdaCallback(on_epoch_end=lambda s: per_epoch.append(_weights(s.model))),
            stopper,
        ],
    )
    best = int(np.argmin(history.val_loss))
    assert 0 < stopper.stopped_epoch < 39, "the run did not stop early; the test shows nothing"
    assert history.epochs == stopper.stopped_epoch + 1 == best + 3
    assert stopper.best_epoch == best and stopper.best == history.val_loss[best]
    assert _weights(model) == per_epoch[best] != per_epoch[-1]


# -- ModelCheckpoint --------------------------------------------------------------------


def _saved(path) -> dict[str, bytes]:
    with tw.device("numpy"):
        return {k: v.numpy().tobytes() for k, v in tw.load(path).items()}


def test_model_checkpoint_every_n_steps_keeps_the_latest(tmp_path) -> None:
    at_step = {}
    saver = ModelCheckpoint(tmp_path, every_n_steps=2, save_top_k=2)
    _fit(
        MLP(4, [8], 3),
        epochs=3,
        callbacks=[
            LambdaCallback(
                on_train_batch_end=lambda s: at_step.update({s.step: _weights(s.model)})
            ),
            saver,
        ],
    )
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["epoch=2-step=6.safetensors", "epoch=3-step=8.safetensors"]
    assert _saved(tmp_path / names[0]) == at_step[6]
    assert _saved(tmp_path / names[1]) == at_step[8]
    assert saver.best_model_path == str(tmp_path / names[1])


def test_model_checkpoint_keeps_the_best_by_a_monitored_value(tmp_path) -> None:
    at_epoch = []
    top = ModelCheckpoint(tmp_path / "top", filename="{epoch}", monitor="val_loss", save_top_k=2)
    best_only = ModelCheckpoint(
        tmp_path / "best", filename="{epoch}", monitor="val_loss", save_best_only=True
    )
    history = _fit(
        MLP(4, [32], 3),
        _noise(60, 0),
        val=_noise(60, 1),
        epochs=8,
        batch_size=20,
        lr=3e-2,
        callbacks=[
            LambdaCallback(on_epoch_end=lambda s: at_epoch.append(_weights(s.model))),
            top,
            best_only,
        ],
    )
    losses = history.val_loss
    ranked = sorted(range(8), key=lambda e: losses[e])
    assert sorted(p.name for p in (tmp_path / "top").iterdir()) == sorted(
        f"{e + 1}.safetensors" for e in ranked[:2]
    )
    for e in ranked[:2]:
        assert _saved(tmp_path / "top" / f"{e + 1}.safetensors") == at_epoch[e]
    improving = [e for e in range(8) if all(losses[e] < losses[d] for d in range(e))]
    assert sorted(p.name for p in (tmp_path / "best").iterdir()) == sorted(
        f"{e + 1}.safetensors" for e in improving
    )
    assert top.best_model_score == best_only.best_model_score == min(losses)
    assert top.best_model_path.endswith(f"{ranked[0] + 1}.safetensors")


# -- LearningRateMonitor, CSVLogger, TensorBoard --------------------------------------------


def test_lr_monitor_and_csv_logger_write_what_the_run_did(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    monitor = LearningRateMonitor()
    per_step = LearningRateMonitor(logging_interval="step")
    path = tmp_path / "log.csv"
    history = _fit(
        MLP(4, [8], 3),
        epochs=3,
        schedule="cosine",
        val=blobs(30, seed=1),
        callbacks=[monitor, per_step, CSVLogger(path)],
    )
    # PyTorch's cosine schedule over the 9 steps, stepped after every batch.
    twin = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1e-2)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(twin, T_max=9)
    expected = []
    for _ in range(9):
        expected.append(twin.param_groups[0]["lr"])
        twin.step()
        schedule.step()
    np.testing.assert_allclose(per_step.lrs["lr"], expected, rtol=1e-12)
    assert monitor.lrs["lr"] == per_step.lrs["lr"][::3]

    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["epoch", "step", "accuracy", "loss", "lr", "val_accuracy", "val_loss"]
    assert [int(r["epoch"]) for r in rows] == [0, 1, 2]
    assert [int(r["step"]) for r in rows] == [3, 6, 9]
    assert [float(r["loss"]) for r in rows] == history.train_loss
    assert [float(r["val_loss"]) for r in rows] == history.val_loss
    assert [float(r["accuracy"]) for r in rows] == history["accuracy"]
    assert [float(r["lr"]) for r in rows] == per_step.lrs["lr"][2::3]


def test_csv_logger_appends_without_a_second_header(tmp_path) -> None:
    path = tmp_path / "log.csv"
    _fit(MLP(4, [8], 3), epochs=1, callbacks=[CSVLogger(path)])
    _fit(MLP(4, [8], 3), epochs=2, callbacks=[CSVLogger(path, append=True)])
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["epoch", "step", "accuracy", "loss"]
    assert [row[:2] for row in rows[1:]] == [["0", "3"], ["0", "3"], ["1", "6"]]


@pytest.mark.skipif(importlib.util.find_spec("tensorboard") is not None, reason="installed")
def test_tensorboard_without_the_package_says_how_to_install_it() -> None:
    with pytest.raises(ImportError, match="pip install tensorboard"):
        TensorBoard("logs")


def test_tensorboard_event_files_read_back(tmp_path) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    history = _fit(
        MLP(4, [8], 3), val=blobs(30, seed=1), callbacks=[TensorBoard(tmp_path, histogram_freq=1)]
    )
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    values = [e.value for e in events.Scalars("val_loss")]
    np.testing.assert_allclose(values, history.val_loss, rtol=1e-6)
    assert "0.weight" in events.Tags()["histograms"]


# -- fit options ------------------------------------------------------------------------


def test_max_steps_ends_the_run_cleanly_and_bounds_the_schedule(backend) -> None:
    steps, ends = [], []
    model = MLP(4, [8], 3)
    history = _fit(
        model,
        epochs=5,
        max_steps=4,
        schedule="cosine",
        val=blobs(30, seed=1),
        callbacks=[
            LambdaCallback(
                on_train_batch_end=lambda s: steps.append(s.optimizer.param_groups[0]["lr"]),
                on_epoch_end=lambda s: ends.append(s.step),
            )
        ],
    )
    # 3 batches an epoch: the second epoch stops after its first batch, and is closed.
    assert ends == [3, 4] and history.epochs == 2 and len(history.val_loss) == 2
    # The cosine schedule spans the 4 steps: the closed form of CosineAnnealingLR(T_max=4).
    expected = [1e-2 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(1, 5)]
    np.testing.assert_allclose(steps, expected, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="max_steps must be a positive integer"):
        _fit(model, max_steps=0)


def test_validation_split_holds_out_the_last_samples(backend) -> None:
    x, y = blobs(120)
    tw.manual_seed(0)
    split = MLP(4, [8], 3)
    tw.manual_seed(0)
    explicit = MLP(4, [8], 3)
    h_split = _fit(split, (x, y), validation_split=0.25)
    h_explicit = _fit(explicit, (x[:90], y[:90]), val=(x[90:], y[90:]))
    assert h_split.val_loss == h_explicit.val_loss and h_split.train_loss == h_explicit.train_loss
    assert _weights(split) == _weights(explicit)
    with pytest.raises(ValueError, match="either val or validation_split"):
        _fit(split, (x, y), validation_split=0.25, val=(x, y))
    with pytest.raises(ValueError, match="validation_split must be a fraction"):
        _fit(split, (x, y), validation_split=1.5)
    with pytest.raises(ValueError, match="leaves no training samples"):
        _fit(split, (x[:1], y[:1]), validation_split=0.5)


def test_accumulate_sums_gradients_into_one_step_per_n_batches(backend) -> None:
    x, y = blobs(120)
    steps = []
    tw.manual_seed(0)
    accumulated = MLP(4, [8], 3)
    tw.manual_seed(0)
    whole = MLP(4, [8], 3)
    options = {"optimizer": "sgd", "lr": 0.5, "shuffle": False, "precision": "fp64"}
    h_acc = _fit(
        accumulated,
        (x, y),
        batch_size=20,
        accumulate=2,
        callbacks=[LambdaCallback(on_train_batch_end=lambda s: steps.append(s.step))],
        **options,
    )
    h_whole = _fit(whole, (x, y), batch_size=40, **options)
    # Two batches of 20 make one step: the gradient of the mean over the 40 samples.
    assert steps == [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6]
    for name, value in whole.state_dict().items():
        np.testing.assert_allclose(
            accumulated.state_dict()[name].numpy(), value.numpy(), rtol=1e-12, atol=1e-14
        )
    np.testing.assert_allclose(h_acc.train_loss, h_whole.train_loss, rtol=1e-12)
    # 120 samples in batches of 50: 3 batches, the last step takes the epoch's third alone.
    steps.clear()
    _fit(
        MLP(4, [8], 3),
        (x, y),
        batch_size=50,
        accumulate=2,
        callbacks=[LambdaCallback(on_train_batch_end=lambda s: steps.append(s.step))],
    )
    assert steps == [0, 1, 2, 2, 3, 4]
    with pytest.raises(ValueError, match="accumulate must be a positive integer"):
        _fit(whole, (x, y), accumulate=0)
