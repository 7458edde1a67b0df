"""The warnings PyTorch's ``DataLoader`` iterators give, with or without workers: pinning that
cannot happen, and an iterable dataset yielding past the length ``len(loader)`` reported."""

from __future__ import annotations

from typing import Any
from warnings import warn

from tensorweaver import accelerator


def warn_about_pinning(loader: Any) -> None:
    """At an iterator's start: ``pin_memory_device`` is deprecated, and without an
    accelerator ``pin_memory=True`` pins nothing (PyTorch's two UserWarnings)."""
    if not loader.pin_memory:
        return
    if loader.pin_memory_device:
        warn(
            "pin_memory_device is deprecated, the current accelerator will be used as the "
            f"device, ignore pin_memory_device='{loader.pin_memory_device}'.",
            stacklevel=3,
        )
    if not accelerator.is_available():
        warn(
            "'pin_memory' argument is set as true but no accelerator is found, then device "
            "pinned memory won't be used.",
            stacklevel=3,
        )


def yield_count(loader: Any) -> YieldCount | None:
    """A counter for an epoch starting now, or None when there is nothing to count against
    (``len(loader)`` never read an iterable dataset's length)."""
    reported = loader._IterableDataset_len_called
    return None if reported is None else YieldCount(loader, reported)


class YieldCount:
    """Batches an epoch has yielded, against the iterable dataset's length ``reported`` by
    the last ``len(loader)``.

    As PyTorch does, batches are compared with the dataset's length in samples, and every
    batch past it warns.
    """

    def __init__(self, loader: Any, reported: int) -> None:
        self._dataset = loader.dataset
        self._reported = reported
        self._workers = loader.num_workers
        self._yielded = 0

    def count(self) -> None:
        """One more batch yielded."""
        self._yielded += 1
        if self._yielded <= self._reported:
            return
        message = (
            f"Length of IterableDataset {self._dataset} was reported to be {self._reported}"
            f"(when accessing len(dataloader)), but {self._yielded} samples have been fetched. "
        )
        if self._workers > 0:
            message += (
                "For multiprocessing data-loading, this could be caused by not properly "
                "configuring the IterableDataset replica at each worker (see "
                "tw.utils.data.get_worker_info)."
            )
        warn(message, stacklevel=3)
