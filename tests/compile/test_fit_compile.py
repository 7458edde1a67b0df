"""tw.fit(..., compile=True) trains exactly as compile=False (the NumPy backend replays the
same primitives, so bit for bit)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import nn
from tensorweaver.compiler import CompileWarning

tw_compile = tw.compile
EPOCHS = 6
STEPS = EPOCHS * 2  # batches: 44 samples in batches of 22


def data(n: int = 44) -> tuple:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    return x, x[:, :3].argmax(1)  # three classes, each in every batch of 22


def run(compile: bool, dropout: float = 0.0, **options) -> tuple:  # noqa: A002
    """History and parameters after fit, and the compiled step (if compile)."""
    compiled = []

    def capture(fn: Any) -> Any:
        compiled.append(tw_compile(fn))
        return compiled[-1]

    tw.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 3))
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as patch:
        warnings.simplefilter("error", CompileWarning)  # no step may fall back to eager
        patch.setattr(tw, "compile", capture)
        history = tw.fit(
            model, data(), epochs=EPOCHS, batch_size=22, progress=False, seed=1, compile=compile,
            **options,
        )  # fmt: skip
    return history, [np.asarray(p.detach()) for p in model.parameters()], compiled


@pytest.mark.parametrize(
    "options",
    [
        {"optimizer": "sgd", "lr": 0.1, "schedule": "cosine", "clip": 1.0},
        {"optimizer": "adam", "lr": 0.01, "accumulate": 2, "dropout": 0.3},
        {"optimizer": "adamw", "lr": 0.01, "val": data(12), "metrics": ("accuracy",)},
    ],
    ids=["sgd-cosine-clip", "adam-accumulate-dropout", "adamw-validation"],
)
def test_fit_with_compile_trains_as_without(options: dict) -> None:
    eager_history, eager_params, none = run(False, **options)
    history, params, (compiled,) = run(True, **options)
    assert none == [] and compiled.traces < STEPS - 2 and compiled.graph_source()
    assert history.train_loss == eager_history.train_loss
    assert history.metrics == eager_history.metrics
    for got, want in zip(params, eager_params):
        np.testing.assert_array_equal(got, want)
    assert history.train_loss[-1] < history.train_loss[0]  # it did train
