"""Fetching one batch (or one sample) from a dataset, in the main process or in a worker.

Fast path: when the dataset is a ``TensorDataset`` (or ``Subset``\\ s of one) and the
collate function is the default one, a batch is taken from each tensor with one slice or
one ``index_select`` instead of indexing every sample and stacking the pieces; the result
is the same as the default collate's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.tensor import Tensor
from tensorweaver.utils.data.collate import default_collate
from tensorweaver.utils.data.dataset import Subset, TensorDataset

#: A batch's indices: a list, or what the loader's own batching makes (``range`` for
#: samples in order, an int64 array of a sampler's order).
Indices = Any


def _tensor_source(dataset: Any) -> tuple[tuple[Tensor, ...], np.ndarray | None] | None:
    """``(tensors, positions)`` when ``dataset`` is a ``TensorDataset`` or ``Subset``\\ s of one.

    ``positions[i]`` is the row of sample ``i`` (``None``: row ``i``). Subclasses that
    override ``__getitem__`` may return anything, so they get no fast path.
    """
    chain = []
    while isinstance(dataset, Subset) and type(dataset).__getitem__ is Subset.__getitem__:
        chain.append(dataset.indices)
        dataset = dataset.dataset
    if not (
        isinstance(dataset, TensorDataset)
        and type(dataset).__getitem__ is TensorDataset.__getitem__
    ):
        return None
    positions = None
    n = len(dataset)
    for indices in reversed(chain):  # the innermost subset indexes the tensors themselves
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if ((idx < -n) | (idx >= n)).any():
            bad = idx[(idx < -n) | (idx >= n)][0]
            raise IndexError(f"Subset index {bad} is out of range for a dataset of {n} samples")
        idx = np.where(idx < 0, idx + n, idx)
        positions = idx if positions is None else positions[idx]
        n = len(idx)
    return dataset.tensors, positions


def _tensor_batch(
    tensors: tuple[Tensor, ...], positions: np.ndarray | None, indices: Indices
) -> list[Tensor]:
    """The samples at ``indices``, one index op per tensor (what collating gives)."""
    if positions is None and isinstance(indices, range) and indices.step == 1:
        return [t[indices.start : indices.stop] for t in tensors]
    rows = np.asarray(indices, dtype=np.int64)
    if positions is not None:
        rows = positions[rows]
    index: dict[Any, Tensor] = {}  # one index tensor per device the tensors live on
    batch = []
    for t in tensors:
        key = t.device.name
        if key not in index:
            index[key] = tw.tensor(rows, dtype=tw.int64, device=t.device)
        batch.append(t.index_select(0, index[key]))
    return batch


def _as_list(indices: Indices) -> list:
    return indices.tolist() if isinstance(indices, np.ndarray) else list(indices)


class MapFetcher:
    """Batches of a map-style dataset: ``collate_fn`` of the samples at a batch's indices
    (``__getitems__`` when the dataset has it), or one converted sample without batching."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        fast = auto_collation and collate_fn is default_collate
        self._tensors = _tensor_source(dataset) if fast else None

    def fetch(self, indices: Indices) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[indices])
        if self._tensors is not None:
            return _tensor_batch(*self._tensors, indices)
        indices = _as_list(indices)
        fetch_many = getattr(self.dataset, "__getitems__", None)
        if callable(fetch_many):
            return self.collate_fn(fetch_many(indices))
        return self.collate_fn([self.dataset[i] for i in indices])


class IterFetcher:
    """Batches of an iterable dataset: the next ``len(indices)`` samples of its stream
    (the indices are placeholders); raises StopIteration once the stream is spent, or when
    only a short batch is left and ``drop_last``."""

    def __init__(
        self, dataset: Any, auto_collation: bool, collate_fn: Callable, drop_last: bool
    ) -> None:
        self.stream: Iterator[Any] = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, indices: Sequence[Any] | None) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.stream))
        samples = []
        for _ in indices:  # type: ignore[union-attr]
            try:
                samples.append(next(self.stream))
            except StopIteration:
                self.ended = True
                break
        if not samples or (self.drop_last and len(samples) < len(indices)):  # type: ignore[arg-type]
            raise StopIteration
        return self.collate_fn(samples)


def make_fetcher(
    dataset: Any, iterable: bool, auto_collation: bool, collate_fn: Callable, drop_last: bool
) -> MapFetcher | IterFetcher:
    """The fetcher for ``dataset``'s kind (``iterable``: an ``IterableDataset``)."""
    if iterable:
        return IterFetcher(dataset, auto_collation, collate_fn, drop_last)
    return MapFetcher(dataset, auto_collation, collate_fn)
