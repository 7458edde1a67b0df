"""Datasets and batching with PyTorch's ``torch.utils.data`` behaviour.

Index shuffling is host work, drawn with a :class:`tw.Generator <tensorweaver.random.Generator>`
as in PyTorch: a ``RandomSampler`` (which ``DataLoader(shuffle=True)`` makes) with a
``generator`` draws each epoch's order from it, so each epoch has a new order and a run
repeats exactly; without one, each epoch starts a generator from a seed drawn from
``tw.default_generator``, so ``tw.manual_seed`` makes shuffling repeatable.
``DataLoader(seed=s)`` is short for ``generator=tw.Generator().manual_seed(s)``.
``random_split`` permutes with ``generator`` (default: ``tw.default_generator``), or with a
generator seeded by ``generator_seed``.

Fast path: when the dataset is a ``TensorDataset`` (or ``Subset``\\ s of one) and the
collate function is the default one, a batch is taken from each tensor with one slice or
one ``index_select`` instead of indexing every sample and stacking the pieces; the result
is the same as the default collate's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized
from itertools import accumulate
from typing import Any, Callable, Generic, TypeVar
from warnings import warn

import numpy as np

import tensorweaver as tw
from tensorweaver.random import (
    Generator,
    check_generator,
    default_generator,
    draw_integers,
    draw_permutation,
)
from tensorweaver.tensor import Tensor

T_co = TypeVar("T_co", covariant=True)

__all__ = [
    "DataLoader",
    "Dataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "TensorDataset",
    "default_collate",
    "random_split",
]


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses implement ``__getitem__`` (and ``__len__`` for loaders)."""

    def __getitem__(self, index: int) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")


class TensorDataset(Dataset[tuple]):
    """Samples ``(t[i] for t in tensors)``: tensors that share their size in dimension 0."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor")
        if any(t.ndim == 0 for t in tensors):
            raise ValueError("TensorDataset: 0-d tensors have no samples; give tensors of ndim ≥ 1")
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) != 1:
            raise ValueError(
                f"TensorDataset: every tensor needs the same size in dimension 0, got {sizes}"
            )
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


class Sampler(Generic[T_co]):
    """The indices of one epoch: subclasses implement ``__iter__`` (and ``__len__``)."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``, every epoch."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Indices in random order, as PyTorch's: each epoch a fresh permutation (repeated, and
    cut, to give ``num_samples``), or with ``replacement`` ``num_samples`` independent
    draws. ``generator`` supplies the draws (see the module for the default)."""

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(
                f"RandomSampler: replacement should be a boolean value, got {replacement!r}"
            )
        if generator is not None:
            check_generator(generator, "RandomSampler")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if (
            isinstance(self.num_samples, bool)
            or not isinstance(self.num_samples, int)
            or self.num_samples <= 0
        ):
            raise ValueError(
                f"RandomSampler: num_samples should be a positive integer, got {self.num_samples!r}"
            )

    @property
    def num_samples(self) -> int:
        """``num_samples``, or the data source's current length."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def _order(self) -> np.ndarray:
        """One epoch's indices (int64)."""
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = Generator().manual_seed(_seed_from_default())
        if self.replacement:
            return draw_integers(generator, (self.num_samples,), 0, n)
        # As PyTorch: one permutation per whole pass, and one more cut to what is left.
        runs = [draw_permutation(generator, n) for _ in range(self.num_samples // n + 1)]
        return np.concatenate(runs)[: self.num_samples]

    def __iter__(self) -> Iterator[int]:
        return iter(self._order().tolist())

    def __len__(self) -> int:
        return self.num_samples


def _seed_from_default() -> int:
    """A seed drawn from ``tw.default_generator`` (so ``tw.manual_seed`` governs it)."""
    return int(draw_integers(default_generator, (), 0, 2**63 - 1))


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
        generator = Generator().manual_seed(generator_seed)
    source = default_generator if generator is None else generator
    order = draw_permutation(check_generator(source, "random_split"), n).tolist()
    return [
        Subset(dataset, order[end - int(k) : end])
        for end, k in zip(accumulate(int(k) for k in lengths), lengths)
    ]


def default_collate(batch: Sequence[Any]) -> Any:
    """Merge a list of samples into a batch, as PyTorch's ``default_collate`` does.

    Tensors and NumPy arrays are stacked along a new dimension 0; Python floats become a
    float64 tensor, ints an int64 tensor, bools a bool tensor; strings stay a list; mappings,
    named tuples and sequences are collated field by field (a tuple becomes a list).
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return tw.stack(list(batch), 0)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, (np.ndarray, np.generic)):
        if elem.dtype.kind in "USO":
            raise TypeError(
                f"default_collate: cannot make a tensor of NumPy dtype {elem.dtype}; "
                "pass a collate_fn that handles it"
            )
        if isinstance(elem, np.generic):
            return tw.as_tensor(np.array(batch))
        return tw.stack([tw.as_tensor(b) for b in batch], 0)
    if isinstance(elem, float):
        return tw.tensor(list(batch), dtype=tw.float64)
    if isinstance(elem, int):
        return tw.tensor(list(batch))
    if isinstance(elem, Mapping):
        fields = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        sizes = {len(sample) for sample in batch}
        if len(sizes) != 1:
            raise RuntimeError(
                "default_collate: every sample's sequence needs the same length, got lengths "
                f"{sorted(sizes)}"
            )
        return [default_collate(list(samples)) for samples in zip(*batch)]
    raise TypeError(
        "default_collate: a batch holds tensors, NumPy arrays, numbers, strings, mappings or "
        f"sequences; found {type(elem).__name__}: pass a collate_fn that handles it"
    )


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


class DataLoader:
    """Batches of ``dataset`` (map-style: ``__getitem__`` and ``__len__``), as in PyTorch.

    Each iteration is one epoch: the indices of ``sampler`` (default: every sample once, in
    order, or shuffled by a :class:`RandomSampler` with ``generator``), in batches of
    ``batch_size`` (the last one smaller unless ``drop_last``), merged by ``collate_fn``
    (default: :func:`default_collate`). ``seed`` fixes the shuffling (see module docs).
    """

    def __init__(
        self,
        dataset: Dataset[Any],
        batch_size: int = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        seed: int | None = None,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        sampler: Sampler[int] | Iterable[int] | None = None,
        generator: Generator | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(
                f"DataLoader: batch_size should be a positive integer, got {batch_size!r}"
            )
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if seed is not None and generator is not None:
            raise ValueError("DataLoader: pass either seed or generator, not both")
        if seed is not None:
            generator = Generator().manual_seed(seed)
        if sampler is None:
            sampler = (
                RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
                if shuffle
                else SequentialSampler(dataset)  # type: ignore[arg-type]
            )
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.seed = seed
        self.generator = generator
        self.sampler = sampler
        self.collate_fn = default_collate if collate_fn is None else collate_fn

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self) -> Iterator[Any]:
        order = _epoch_order(self.sampler)
        n = len(self.dataset) if order is None else len(order)  # type: ignore[arg-type]
        fast = _tensor_source(self.dataset) if self.collate_fn is default_collate else None
        stop = n - n % self.batch_size if self.drop_last else n
        for start in range(0, stop, self.batch_size):
            end = min(start + self.batch_size, n)
            if fast is not None:
                yield _tensor_batch(*fast, order, start, end)
            else:
                indices = range(start, end) if order is None else order[start:end].tolist()
                yield self.collate_fn([self.dataset[i] for i in indices])


def _epoch_order(sampler: Any) -> np.ndarray | None:
    """One epoch's indices from ``sampler`` (None: the dataset in order)."""
    if type(sampler) is SequentialSampler:
        return None
    if type(sampler) is RandomSampler:
        return sampler._order()
    return np.fromiter(iter(sampler), dtype=np.int64)


def _tensor_batch(
    tensors: tuple[Tensor, ...],
    positions: np.ndarray | None,
    order: np.ndarray | None,
    start: int,
    end: int,
) -> list[Tensor]:
    """Samples ``start:end`` of the epoch, one index op per tensor (what collating gives)."""
    if positions is None and order is None:
        return [t[start:end] for t in tensors]
    rows = order[start:end] if order is not None else np.arange(start, end)
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
