"""Datasets: map-style (``__getitem__``), iterable (``__iter__``), and their combinations,
as in ``torch.utils.data.dataset``.

Where PyTorch asserts (an empty ``ConcatDataset``, an iterable dataset inside one, a
map-style dataset inside a ``ChainDataset``, a ``TensorDataset`` size mismatch), these raise
an ``AssertionError`` too (the first three one that is also the ``ValueError``/``TypeError``
they raised before), with a message saying what to pass instead.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate
from typing import Any, Generic, TypeVar
from warnings import warn

from tensorweaver.random import Generator, check_generator, default_generator, draw_permutation
from tensorweaver.tensor import Tensor

T_co = TypeVar("T_co", covariant=True)


class EmptyDatasetsError(AssertionError, ValueError):
    """``ConcatDataset([])``: an AssertionError, as PyTorch raises, and a ValueError, as tw
    raised before."""


class DatasetKindError(AssertionError, TypeError):
    """An iterable dataset in a ``ConcatDataset``, a map-style one in a ``ChainDataset``: an
    AssertionError, as PyTorch raises, and a TypeError, as tw raised before."""


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses implement ``__getitem__`` (and ``__len__`` for loaders).

    A subclass may also implement ``__getitems__(indices) -> list`` to fetch a batch at once;
    the ``DataLoader`` then calls it instead of ``__getitem__`` for each index.
    """

    def __getitem__(self, index: int) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """A dataset that is a stream: subclasses implement ``__iter__``.

    With ``num_workers > 0`` every worker iterates its own copy of the dataset; to split the
    stream among them, read ``get_worker_info()`` in ``__iter__`` (or in ``worker_init_fn``).
    ``__iter__`` stays abstract (``Iterable``'s), so a subclass without one cannot be made,
    as in PyTorch.
    """

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple]):
    """Samples ``(t[i] for t in tensors)``: tensors that share their size in dimension 0."""

    def __init__(self, *tensors: Tensor) -> None:
        # PyTorch's exception classes: an assertion for sizes that differ, and no check of
        # an empty call (its len() then fails, as PyTorch's does).
        if any(t.ndim == 0 for t in tensors):
            raise IndexError("TensorDataset: 0-d tensors have no samples; give tensors of ndim ≥ 1")
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) > 1:
            raise AssertionError(
                f"Size mismatch between tensors: every tensor needs the same size in "
                f"dimension 0, got {sizes}"
            )
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class StackDataset(Dataset[Any]):
    """Sample ``i`` is ``(d[i] for d in args)``, or ``{k: d[i] for k, d in kwargs.items()}``:
    datasets of one length, given either positionally or by keyword."""

    def __init__(self, *args: Dataset[Any], **kwargs: Dataset[Any]) -> None:
        if args and kwargs:
            raise ValueError(
                "StackDataset: give the datasets either positionally (tuple samples) or by "
                "keyword (dict samples), not both"
            )
        if not args and not kwargs:
            raise ValueError("StackDataset: at least one dataset should be passed")
        self.datasets: tuple | dict = args or kwargs
        parts = args or tuple(kwargs.values())
        lengths = [len(d) for d in parts]  # type: ignore[arg-type]
        if len(set(lengths)) != 1:
            raise ValueError(f"StackDataset: size mismatch between datasets: lengths {lengths}")
        self._length = lengths[0]

    def __getitem__(self, index: int) -> Any:
        if isinstance(self.datasets, dict):
            return {key: d[index] for key, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list[int]) -> list[Any]:
        """The samples at ``indices``, each dataset read through its own ``__getitems__``
        where it has one (so the ``DataLoader`` fetches a batch of each at once)."""
        parts = self.datasets if isinstance(self.datasets, dict) else dict(enumerate(self.datasets))
        columns = {key: _fetch_many(d, indices) for key, d in parts.items()}
        for key, samples in columns.items():
            if len(samples) != len(indices):
                raise ValueError(
                    f"StackDataset: nested dataset's output size mismatch: dataset {key!r} "
                    f"gave {len(samples)} samples for {len(indices)} indices"
                )
        rows = [dict(zip(columns, row)) for row in zip(*columns.values())]
        if isinstance(self.datasets, dict):
            return rows
        return [tuple(row.values()) for row in rows]

    def __len__(self) -> int:
        return self._length


def _fetch_many(dataset: Any, indices: list[int]) -> list[Any]:
    """``dataset``'s samples at ``indices``, in one ``__getitems__`` call where it has one."""
    fetch_many = getattr(dataset, "__getitems__", None)
    if callable(fetch_many):
        return fetch_many(indices)
    return [dataset[i] for i in indices]


class ConcatDataset(Dataset[T_co]):
    """The samples of ``datasets`` one after the other (map-style datasets only)."""

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise EmptyDatasetsError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise DatasetKindError(
                    "ConcatDataset does not support IterableDataset; chain streams with "
                    "ChainDataset"
                )
        self.cumulative_sizes = list(accumulate(len(d) for d in self.datasets))  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ValueError(
                    f"ConcatDataset: absolute value of index {idx} should not exceed dataset "
                    f"length {n}"
                )
            idx += n
        if idx >= n:
            raise IndexError(f"ConcatDataset: index {idx} is out of range for {n} samples")
        part = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[part - 1] if part else 0
        return self.datasets[part][idx - start]


class ChainDataset(IterableDataset):
    """The streams of ``datasets`` (iterable datasets) one after the other."""

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = datasets

    def _streams(self) -> Iterator[IterableDataset]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise DatasetKindError(
                    f"ChainDataset only supports IterableDataset, got {type(d).__name__}; "
                    "join map-style datasets with ConcatDataset"
                )
            yield d

    def __iter__(self) -> Iterator[Any]:
        for d in self._streams():
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self._streams())  # type: ignore[arg-type]


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]  # type: ignore[index]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[T_co]:
        """The samples at ``indices``, through the dataset's own ``__getitems__`` if it has one."""
        return _fetch_many(self.dataset, [self.indices[i] for i in indices])

    def __len__(self) -> int:
        return len(self.indices)


def random_split(
    dataset: Dataset[T_co],
    lengths: Sequence[int | float],
    generator: Generator | None = None,
    generator_seed: int | None = None,
) -> list[Subset[T_co]]:
    """Split ``dataset`` at random into non-overlapping ``Subset``\\ s of the given lengths.

    ``lengths`` are counts summing to ``len(dataset)``, or fractions summing to 1 (floor of
    each share, the remainder dealt one by one from the first split on, as in PyTorch). The
    permutation is ``tw.randperm(n, generator=generator)``: ``generator`` defaults to
    ``tw.default_generator``; ``generator_seed`` instead seeds a generator of its own.
    """
    if generator is not None and generator_seed is not None:
        raise ValueError("random_split: pass either generator or generator_seed, not both")
    n = len(dataset)  # type: ignore[arg-type]
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"random_split: fraction {frac} at index {i} is not in [0, 1]")
        counts = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, count in enumerate(counts):
            if count == 0:
                warn(f"random_split: split {i} is empty", UserWarning, stacklevel=2)
        lengths = counts
    if any(not float(k).is_integer() or k < 0 for k in lengths) or sum(lengths) != n:
        raise ValueError(
            f"random_split: lengths {list(lengths)} must be non-negative counts summing to the "
            f"dataset's length {n}, or fractions summing to 1"
        )
    if generator_seed is not None:
        generator = Generator().manual_seed(int(generator_seed))
    source = default_generator if generator is None else generator
    order = draw_permutation(check_generator(source, "random_split"), n).tolist()
    return [
        Subset(dataset, order[end - int(k) : end])
        for end, k in zip(accumulate(int(k) for k in lengths), lengths)
    ]
