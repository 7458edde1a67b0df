"""``TensorBoard``: scalars and weight histograms as TensorBoard event files.

Needs the ``tensorboard`` package (its event-file writer and protocol buffers); without it,
building the callback raises an ``ImportError`` that says how to install it.
"""

from __future__ import annotations

import os
from typing import Any, Union

import numpy as np

from tensorweaver.training.callbacks.base import Callback, RunState

PathLike = Union[str, "os.PathLike[str]"]


def _tensorboard() -> Any:
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as exc:
        raise ImportError(
            "TensorBoard callback needs the tensorboard package: pip install tensorboard"
        ) from exc
    return event_pb2, summary_pb2, EventFileWriter


class TensorBoard(Callback):
    """Write each epoch's ``state.logs`` as scalars (step: the epoch, from 0) to an event
    file in ``log_dir``, and every ``histogram_freq`` epochs (0: never) a histogram of each
    parameter. ``update_freq`` N (an int) also writes the batch loss every N steps as
    ``batch_loss`` (step: the optimizer step); reading it synchronises the device."""

    def __init__(
        self, log_dir: PathLike = "logs", histogram_freq: int = 0, update_freq: str | int = "epoch"
    ) -> None:
        self._event, self._summary, writer = _tensorboard()
        if update_freq != "epoch" and (
            isinstance(update_freq, bool) or not isinstance(update_freq, int) or update_freq < 1
        ):
            raise ValueError(
                f"TensorBoard: update_freq must be 'epoch' or a positive int, got {update_freq!r}"
            )
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.update_freq = update_freq
        self._writer_type = writer
        self._writer: Any = None

    def _write(self, step: int, values: list[Any]) -> None:
        if self._writer is None:
            os.makedirs(self.log_dir, exist_ok=True)
            self._writer = self._writer_type(self.log_dir)
        summary = self._summary.Summary(value=values)
        self._writer.add_event(self._event.Event(step=step, summary=summary))

    def _scalar(self, tag: str, value: float) -> Any:
        return self._summary.Summary.Value(tag=tag, simple_value=float(value))

    def _histogram(self, tag: str, values: np.ndarray) -> Any:
        values = values.astype(np.float64).ravel()
        counts, edges = np.histogram(values, bins=30)
        proto = self._summary.HistogramProto(
            min=float(values.min()),
            max=float(values.max()),
            num=float(values.size),
            sum=float(values.sum()),
            sum_squares=float(np.dot(values, values)),
            bucket_limit=edges[1:].tolist(),
            bucket=counts.astype(np.float64).tolist(),
        )
        return self._summary.Summary.Value(tag=tag, histo=proto)

    def on_train_batch_end(self, state: RunState) -> None:
        if self.update_freq != "epoch" and state.step % self.update_freq == 0:
            if state.batch_loss is not None:
                self._write(state.step, [self._scalar("batch_loss", state.batch_loss.item())])

    def on_epoch_end(self, state: RunState) -> None:
        values = [self._scalar(name, value) for name, value in state.logs.items()]
        if self.histogram_freq and (state.epoch + 1) % self.histogram_freq == 0:
            for name, param in state.model.named_parameters():
                values.append(self._histogram(name, param.detach().float().numpy()))
        self._write(state.epoch, values)
        self._writer.flush()

    def on_train_end(self, state: RunState) -> None:
        self._close()

    def on_exception(self, state: RunState, exception: BaseException) -> None:
        self._close()

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
