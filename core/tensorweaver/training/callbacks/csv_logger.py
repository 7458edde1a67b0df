"""``CSVLogger``: one CSV row per epoch, readable with the standard library's ``csv``."""

from __future__ import annotations

import csv
import os
from typing import IO, Any, Union

from tensorweaver.training.callbacks.base import Callback, RunState

PathLike = Union[str, "os.PathLike[str]"]


class CSVLogger(Callback):
    """Write each epoch's ``state.logs`` to ``filename`` as Keras' ``CSVLogger`` does.

    Columns: ``epoch`` (from 0), ``step`` (steps done), then the first epoch's log names,
    sorted; a name missing later is written ``NA``. ``append`` continues an existing file
    (without a second header). Rows are flushed as they are written; a resumed run first
    cuts the file back to the rows of its checkpoint, so no epoch appears twice.
    """

    def __init__(self, filename: PathLike, separator: str = ",", append: bool = False) -> None:
        self.filename = os.fspath(filename)
        self.separator = separator
        self.append = append
        self.columns: list[str] | None = None
        self._offset: int | None = None  # bytes written by the run, for a resumed one
        self._file: IO[str] | None = None
        self._writer: Any = None

    def on_train_begin(self, state: RunState) -> None:
        if self._offset is not None and state.step > 0 and os.path.exists(self.filename):
            self._file = open(self.filename, "r+", newline="", encoding="utf-8")  # noqa: SIM115
            self._file.truncate(self._offset)
            self._file.seek(self._offset)
        else:
            continuing = self.append and os.path.exists(self.filename)
            if not continuing:
                self.columns = None
            mode = "a" if continuing else "w"
            self._file = open(self.filename, mode, newline="", encoding="utf-8")  # noqa: SIM115
            if continuing and self.columns is None:
                self.columns = _header(self.filename, self.separator)
        self._writer = None
        self._offset = self._file.tell()

    def on_epoch_end(self, state: RunState) -> None:
        if self._file is None:
            return
        if self.columns is None:
            self.columns = ["epoch", "step", *sorted(state.logs)]
            self._csv().writerow(self.columns)
        row = {"epoch": state.epoch, "step": state.step, **state.logs}
        self._csv().writerow([row.get(name, "NA") for name in self.columns])
        self._file.flush()
        self._offset = self._file.tell()

    def _csv(self) -> Any:
        if self._writer is None:
            self._writer = csv.writer(self._file, delimiter=self.separator)
        return self._writer

    def on_train_end(self, state: RunState) -> None:
        self._close()

    def on_exception(self, state: RunState, exception: BaseException) -> None:
        self._close()

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self._writer = None

    def state_dict(self) -> dict[str, Any]:
        return {"columns": self.columns, "offset": self._offset}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.columns = state_dict["columns"]
        self._offset = state_dict["offset"]


def _header(path: str, separator: str) -> list[str] | None:
    """The first row of an existing CSV file (None if it is empty)."""
    with open(path, newline="", encoding="utf-8") as f:
        return next(csv.reader(f, delimiter=separator), None)
