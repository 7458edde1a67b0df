"""History: what it records, how it is read, and its optional plot."""

from __future__ import annotations

import sys

import pytest
from tensorweaver.training import History


def _history() -> History:
    history = History(device="numpy:cpu:0")
    history.record({"loss": 1.0, "accuracy": 0.5}, {"loss": 1.2, "accuracy": 0.4}, 0.5)
    history.record({"loss": 0.6, "accuracy": 0.8}, {"loss": 0.9, "accuracy": 0.7}, 0.25)
    return history


def test_record_fills_one_entry_per_epoch() -> None:
    history = _history()
    assert history.epochs == 2
    assert history.train_loss == [1.0, 0.6] and history.val_loss == [1.2, 0.9]
    assert history.metrics == {"accuracy": [0.5, 0.8], "val_accuracy": [0.4, 0.7]}
    assert history.wall_time == 0.75
    assert history["loss"] == history["train_loss"] == [1.0, 0.6]
    assert history["val_accuracy"] == [0.4, 0.7]
    with pytest.raises(KeyError, match="has loss, val_loss and"):
        history["f1"]


def test_without_validation_there_is_no_val_entry() -> None:
    history = History(device="torch:cpu:0")
    history.record({"loss": 1.0}, None, 0.1)
    assert history.val_loss == [] and history.metrics == {}


def test_plot_without_matplotlib_names_the_extra(monkeypatch, tmp_path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install tensorweaver\[plot\]"):
        _history().plot(tmp_path / "h.png")


def test_plot_writes_a_png(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "history.png"
    _history().plot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
