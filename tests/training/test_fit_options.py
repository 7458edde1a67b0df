"""fit's class_weight, sample_weight, max_time and eval_every: each against a hand-written
loop doing the same, and each continuing bit for bit through a checkpoint and resume."""

from __future__ import annotations

import datetime
import importlib

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import torch
from tensorweaver.models import MLP
from tensorweaver.training import evaluate, fit
from tensorweaver.training.callbacks import LambdaCallback
from tensorweaver.training.losses import get_weighted_loss
from tensorweaver.utils.data import DataLoader, TensorDataset
from training_data import blobs
from tw_backends import entered

# 120 samples in batches of 40: 3 optimizer steps an epoch.
_OPTIONS = {"epochs": 3, "batch_size": 40, "progress": False, "seed": 5, "precision": "fp64"}


def _model() -> MLP:
    tw.manual_seed(0)
    return MLP(4, [8], 3).to(tw.float64)


def _weights(model: tw.nn.Module) -> dict[str, bytes]:
    return {k: v.detach().numpy().tobytes() for k, v in model.state_dict().items()}


def _sgd(model: tw.nn.Module) -> tw.optim.SGD:
    return tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def _sample_weights(n: int = 120) -> np.ndarray:
    return np.random.default_rng(7).uniform(0.1, 3.0, n)


def _hand_loop(x: np.ndarray, y: np.ndarray, w: np.ndarray, epochs: int = 3) -> MLP:
    """What fit(sample_weight=w) does, written out: the per-sample cross entropy times the
    weight, averaged over the batch, on the data shuffled as fit shuffles it."""
    model = _model()
    optimizer = _sgd(model)
    data = TensorDataset(
        tw.tensor(x, dtype=tw.float64), tw.tensor(y), tw.tensor(w, dtype=tw.float64)
    )
    loader = DataLoader(data, batch_size=40, shuffle=True, seed=5)
    for _ in range(epochs):
        for xb, yb, wb in loader:
            optimizer.zero_grad()
            loss = (F.cross_entropy(model(xb), yb, reduction="none") * wb).mean()
            loss.backward()
            optimizer.step()
    return model


# -- sample_weight and class_weight ------------------------------------------------------


def test_sample_weight_takes_the_steps_of_a_hand_written_loop(backend) -> None:
    x, y = blobs()
    w = _sample_weights()
    model = _model()
    fit(model, (x, y), optimizer=_sgd(model), sample_weight=w, **_OPTIONS)
    assert _weights(model) == _weights(_hand_loop(x, y, w))
    unweighted = _model()
    fit(unweighted, (x, y), optimizer=_sgd(unweighted), **_OPTIONS)
    assert _weights(unweighted) != _weights(model)


def test_class_weight_is_each_samples_class_weight(backend) -> None:
    x, y = blobs()
    classes = {0: 0.5, 2: 4.0}  # class 1 left out: weight 1, as Keras
    model = _model()
    fit(model, (x, y), optimizer=_sgd(model), class_weight=classes, **_OPTIONS)
    per_sample = np.array([classes.get(int(c), 1.0) for c in y])
    assert _weights(model) == _weights(_hand_loop(x, y, per_sample))


def test_the_weighted_loss_is_divided_by_the_batch_size_as_keras() -> None:
    rng = np.random.default_rng(1)
    out, y, w = rng.standard_normal((6, 3)), rng.integers(0, 3, 6), rng.uniform(0, 2, 6)
    loss = get_weighted_loss("cross_entropy", classes=True)
    got = loss(tw.tensor(out), tw.tensor(y), tw.tensor(w)).item()
    # Keras' sum_over_batch_size: sum(loss * weight) / batch size, not / sum(weight).
    per_sample = torch.nn.functional.cross_entropy(
        torch.tensor(out), torch.tensor(y), reduction="none"
    )
    expected = (per_sample * torch.tensor(w)).sum().item() / 6
    assert abs(got - expected) <= 1e-12
    # A loss of several values per sample is averaged per sample first (Keras' mse).
    target = rng.standard_normal((6, 3))
    mse = get_weighted_loss("mse", classes=False)
    got = mse(tw.tensor(out), tw.tensor(target), tw.tensor(w)).item()
    expected = float((((out - target) ** 2).mean(1) * w).mean())
    assert abs(got - expected) <= 1e-12


def test_a_loss_layer_is_weighted_with_its_options_and_left_as_it_was() -> None:
    rng = np.random.default_rng(2)
    out, y, w = rng.standard_normal((5, 4)), rng.integers(0, 4, 5), rng.uniform(0, 2, 5)
    layer = tw.nn.CrossEntropyLoss(label_smoothing=0.1)
    got = get_weighted_loss(layer, classes=True)(tw.tensor(out), tw.tensor(y), tw.tensor(w))
    twin = torch.nn.CrossEntropyLoss(label_smoothing=0.1, reduction="none")
    expected = (twin(torch.tensor(out), torch.tensor(y)) * torch.tensor(w)).mean().item()
    assert abs(got.item() - expected) <= 1e-12
    assert layer.reduction == "mean"


def test_weights_stay_with_the_training_part_of_validation_split() -> None:
    x, y = blobs()
    w = _sample_weights()
    split = _model()
    history = fit(
        split,
        (x, y),
        optimizer=_sgd(split),
        sample_weight=w,
        validation_split=0.25,
        **_OPTIONS,
    )
    explicit = _model()
    expected = fit(
        explicit,
        (x[:90], y[:90]),
        optimizer=_sgd(explicit),
        sample_weight=w[:90],
        val=(x[90:], y[90:]),
        **_OPTIONS,
    )
    assert _weights(split) == _weights(explicit)
    assert history.val_loss == expected.val_loss


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"class_weight": {0: 2.0}, "loss": "mse"}, "class_weight weights samples"),
        ({"class_weight": {0: 2.0}, "sample_weight": np.ones(120)}, "not both"),
        ({"sample_weight": np.ones(119)}, r"shape \(120,\), got shape \(119,\)"),
        ({"sample_weight": np.ones(120), "loss": lambda o, t: o.sum()}, "loss per sample"),
        ({"class_weight": {-1: 2.0}}, "class index"),
        ({"class_weight": [1.0, 2.0]}, "must be a dict"),
    ],
)
def test_bad_weights_are_clear_errors(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit(_model(), blobs(), **{**_OPTIONS, **options})


def test_class_weight_needs_class_index_targets() -> None:
    x, _ = blobs()
    with pytest.raises(ValueError, match="class_weight needs class indices"):
        fit(_model(), (x, np.zeros(120)), loss="cross_entropy", class_weight={0: 1.0})
    with pytest.raises(ValueError, match="sample_weight and class_weight need train_data"):
        fit(_model(), DataLoader(TensorDataset(tw.tensor(x))), sample_weight=np.ones(120))


# -- max_time ------------------------------------------------------------------------------


class _Clock:
    """fit's clock, moved on by a second at every batch's end."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def tick(self, _state) -> None:
        self.now += 1.0


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    clock = _Clock()
    monkeypatch.setattr(importlib.import_module("tensorweaver.training.fit"), "time", clock)
    return clock


def _ticking(clock: _Clock) -> list:
    return [LambdaCallback(on_train_batch_end=clock.tick)]


@pytest.mark.parametrize(
    ("max_time", "last_step"),
    [(2.5, 3), (datetime.timedelta(seconds=1, milliseconds=500), 2)],
)
def test_max_time_stops_after_the_step_it_ran_out_in_and_resumes(
    clock, tmp_path, max_time, last_step
) -> None:
    x, y = blobs()
    w = _sample_weights()
    val = blobs(30, seed=1)
    options = {**_OPTIONS, "sample_weight": w, "val": val}
    steps = []
    callbacks = [*_ticking(clock), LambdaCallback(on_train_end=lambda s: steps.append(s.step))]
    stopped = _model()
    history = fit(
        stopped,
        (x, y),
        optimizer=_sgd(stopped),
        max_time=max_time,
        checkpoint_dir=tmp_path,
        callbacks=callbacks,
        **options,
    )
    # A second a batch: max_time runs out during step 3 (at the epoch's end) or step 2
    # (inside it); the epoch is closed, and the checkpoint is of that step.
    assert steps == [last_step]
    assert history.epochs == 1 and len(history.val_loss) == 1
    resumed = _model()
    history = fit(
        resumed,
        (x, y),
        optimizer=_sgd(resumed),
        checkpoint_dir=tmp_path,
        resume=True,
        callbacks=callbacks,  # a resumed run has the run's callbacks
        **options,
    )
    whole = _model()
    expected = fit(whole, (x, y), optimizer=_sgd(whole), **options)
    assert _weights(resumed) == _weights(whole) == _weights(_hand_loop(x, y, w))
    assert history.train_loss == expected.train_loss and history.val_loss == expected.val_loss


def test_max_time_must_be_positive() -> None:
    for bad in (0, -1.0, "1h", datetime.timedelta(0)):
        with pytest.raises(ValueError, match="max_time must be a positive"):
            fit(_model(), blobs(), max_time=bad, progress=False)


# -- eval_every ----------------------------------------------------------------------------


def test_eval_every_validates_every_n_steps(backend) -> None:
    val = blobs(30, seed=1)
    seen = []

    def check(state) -> None:
        # The logged numbers are those of the model as it stands at that step.
        now = evaluate(state.model, val, batch_size=40)
        seen.append((state.step, state.logs["val_loss"], now["loss"]))

    model = _model()
    history = fit(
        model,
        blobs(),
        optimizer=_sgd(model),
        val=val,
        eval_every=2,
        callbacks=[LambdaCallback(on_validation_end=check)],
        **_OPTIONS,
    )
    evals = history.step_evals
    assert evals["step"] == [2, 4, 6, 8]
    assert len(evals["val_loss"]) == len(evals["val_accuracy"]) == 4
    # Steps 2, 3 (epoch end), 4, 6 (epoch end and eval_every), 8, 9 (epoch end).
    assert [s for s, _, _ in seen] == [2, 3, 4, 6, 6, 8, 9]
    for _, logged, now in seen:
        assert abs(logged - now) <= 1e-12
    by_step = [logged for s, logged, _ in seen if s in (2, 4, 8)]
    assert by_step == [evals["val_loss"][i] for i in (0, 1, 3)]
    assert evals["val_loss"][2] == history.val_loss[1]  # step 6 closes the second epoch


def test_eval_every_needs_validation_data_and_a_positive_count() -> None:
    with pytest.raises(ValueError, match="eval_every needs validation data"):
        fit(_model(), blobs(), eval_every=2, progress=False)
    with pytest.raises(ValueError, match="eval_every must be a positive"):
        fit(_model(), blobs(), val=blobs(30), eval_every=0, progress=False)


# -- resume --------------------------------------------------------------------------------


def test_a_run_stopped_by_max_steps_resumes_bit_for_bit(backend, tmp_path) -> None:
    x, y = blobs()
    options = {
        **_OPTIONS,
        "sample_weight": _sample_weights(),
        "val": blobs(30, seed=1),
        "eval_every": 2,
    }
    whole = _model()
    expected = fit(
        whole, (x, y), optimizer=_sgd(whole), checkpoint_dir=tmp_path / "whole", **options
    )
    stopped = _model()
    first = fit(
        stopped,
        (x, y),
        optimizer=_sgd(stopped),
        checkpoint_dir=tmp_path / "run",
        max_steps=4,  # in the second epoch, after its first step
        **options,
    )
    assert first.step_evals["step"] == [2, 4] and first.epochs == 2
    again = _model()  # the same max_steps: nothing more to do
    fit(
        again,
        (x, y),
        optimizer=_sgd(again),
        checkpoint_dir=tmp_path / "run",
        resume=True,
        max_steps=4,
        **options,
    )
    assert _weights(again) == _weights(stopped)
    resumed = _model()
    history = fit(
        resumed,
        (x, y),
        optimizer=_sgd(resumed),
        checkpoint_dir=tmp_path / "run",
        resume=True,
        **options,
    )
    assert _weights(resumed) == _weights(whole)
    assert history.train_loss == expected.train_loss
    assert history.val_loss == expected.val_loss
    assert history.step_evals == expected.step_evals
    assert history.step_evals["step"] == [2, 4, 6, 8]


@pytest.mark.filterwarnings("ignore:(?s).*Seeding the random number generator")
def test_a_stopped_run_resumes_on_cunumeric_within_float_tolerance(tmp_path) -> None:
    x, y = blobs()
    options = {**_OPTIONS, "epochs": 2, "val": blobs(30, seed=1)}
    runs = {"whole": [], "stopped": [], "resumed": []}

    def run(name: str, directory: str, **more) -> MLP:
        model = _model()
        steps = LambdaCallback(on_train_batch_end=lambda s: runs[name].append(s.step))
        fit(model, (x, y), optimizer=_sgd(model), checkpoint_dir=tmp_path / directory,
            callbacks=[steps], **options, **more)  # fmt: skip
        return model

    with entered("cunumeric", seed=0):
        whole = run("whole", "whole")
        run("stopped", "run", max_steps=4)  # in the second epoch
        resumed = run("resumed", "run", resume=True)
    # The resumed run went on from the checkpoint, not from the start.
    assert runs == {"whole": [1, 2, 3, 4, 5, 6], "stopped": [1, 2, 3, 4], "resumed": [5, 6]}
    for name, value in whole.state_dict().items():
        np.testing.assert_allclose(
            np.asarray(resumed.state_dict()[name]), np.asarray(value), rtol=1e-12, err_msg=name
        )


def test_fit_names_inputs_and_targets_of_other_lengths() -> None:
    # TensorDataset raises PyTorch's AssertionError; tw.fit says which argument is wrong
    model = tw.nn.Linear(3, 2)
    data = (np.zeros((5, 3), np.float32), np.zeros(4, np.int64))
    with pytest.raises(ValueError, match=r"train_data.*one number of samples.*\[5, 4\]"):
        tw.fit(model, data, loss="cross_entropy", epochs=1)
