"""Progress of ``tw.fit``: a tqdm bar per epoch, or one printed line per epoch without tqdm.

The numbers shown are the epoch's, read once the epoch ends: showing a running loss per
batch would synchronise the device on every step.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


def _summary(logs: dict[str, float]) -> dict[str, str]:
    return {name: f"{value:.4g}" for name, value in logs.items()}


class Progress:
    """Wraps each epoch's batches and reports the epoch's numbers at its end."""

    def __init__(self, enabled: bool, epochs: int) -> None:
        self.enabled = enabled
        self.epochs = epochs
        self._bar: Any = None
        self._tqdm = None
        if enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:  # tqdm is optional (tensorweaver[progress])
                tqdm = None
            self._tqdm = tqdm

    def batches(
        self, batches: Iterable[T], epoch: int, total: int | None, done: int = 0
    ) -> Iterator[T]:
        """Yield ``batches``, advancing a bar when tqdm is there (``epoch`` counts from 0;
        ``done`` batches of it were done before, by a run this one resumes).

        The bar stays open after the last batch so that :meth:`end_epoch` can show the
        epoch's numbers, validation included, on it.
        """
        if self._tqdm is None:
            yield from batches
            return
        self._bar = self._tqdm(total=total, initial=done, desc=f"epoch {epoch + 1}/{self.epochs}")
        for batch in batches:
            yield batch
            self._bar.update()

    def end_epoch(self, epoch: int, logs: dict[str, float]) -> None:
        """Show the epoch's loss and metrics (``logs``) on its bar, or print them."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_postfix(_summary(logs))
            self._bar.close()
            self._bar = None
        else:
            shown = "  ".join(f"{k}={v}" for k, v in _summary(logs).items())
            print(f"epoch {epoch + 1}/{self.epochs}  {shown}", flush=True)

    def close(self) -> None:
        """Close a bar left open (the epoch ended early, by an error)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
