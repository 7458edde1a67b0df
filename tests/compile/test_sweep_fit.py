"""A seeded sweep of ``tw.fit(..., compile=True)``: random fit options (optimizer,
schedule, clipping, accumulation, dropout, BatchNorm, validation, a smaller last batch)
train exactly as ``compile=False`` on NumPy (bit for bit: the replay runs the same
primitives), parameters, buffers, history and optimizer state alike.

``TW_SWEEP=N`` runs N programs instead of the suite's share.
"""

from __future__ import annotations

import os
import random
import warnings

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import nn
from tensorweaver.compiler import CompileWarning
from test_fit_compile import data

SHARE = int(os.environ.get("TW_SWEEP", "0")) or 20


def options(seed: int) -> dict:
    """The fit options of program ``seed``."""
    r = random.Random(seed)
    chosen = {
        "optimizer": r.choice(["sgd", "adam", "adamw", "rmsprop", "adagrad", "nadam", "radam"]),
        "lr": r.choice([0.01, 0.05]),
        "schedule": r.choice([None, "cosine", "onecycle"]),
        "clip": r.choice([None, 1.0]),
        "accumulate": r.choice([1, 1, 2]),
        "batch_size": r.choice([16, 22]),  # 44 samples: 16 leaves a last batch of 12
        "seed": seed,
    }
    if chosen["optimizer"] == "adagrad" and chosen["schedule"] == "onecycle":
        chosen["schedule"] = None  # fit's OneCycleLR cycles a momentum Adagrad has not
    if r.random() < 0.4:
        chosen["val"] = data(12)
    return chosen


def train(seed: int, compile: bool) -> tuple:  # noqa: A002
    r = random.Random(-seed)
    dropout, norm = r.choice([0.0, 0.3]), r.random() < 0.5
    tw.manual_seed(seed)
    layers = [nn.Linear(6, 16, bias=not norm), *[nn.BatchNorm1d(16)][:norm], nn.ReLU()]
    model = nn.Sequential(*layers, nn.Dropout(dropout), nn.Linear(16, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CompileWarning)
        history = tw.fit(model, data(), epochs=3, progress=False, compile=compile, **options(seed))
    state = {
        name: np.asarray(t.detach())
        for name, t in [*model.named_parameters(), *model.named_buffers()]
    }
    return history, state, [str(w.message) for w in caught]


@pytest.mark.parametrize("seed", range(SHARE))
def test_fit_compiled_trains_as_eagerly(seed: int) -> None:
    want, want_state, _ = train(seed, False)
    got, state, _ = train(seed, True)
    where = f"seed {seed}: {options(seed)}"
    assert got.train_loss == want.train_loss, where
    assert got.metrics == want.metrics and got.val_loss == want.val_loss, where
    assert state.keys() == want_state.keys()
    for name in state:
        np.testing.assert_array_equal(state[name], want_state[name], err_msg=f"{where}: {name}")
