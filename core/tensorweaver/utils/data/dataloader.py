"""``DataLoader``: batches of a dataset, in this process or in worker processes, as PyTorch's.

Randomness: ``DataLoader(seed=s)`` (TensorWeaver's) is short for
``generator=tw.Generator().manual_seed(s)``. As in PyTorch, an iterator with workers first
draws a base seed from ``generator`` (default: ``tw.default_generator``), and worker ``i`` is
seeded with ``base_seed + i`` (see ``worker.seed_worker``); shuffling then draws from the
same generator. Unlike PyTorch, an iterator without workers draws no base seed (it has no
use for one, and runs seeded before workers existed keep their batches), so a shuffle driven
by a shared generator differs between ``num_workers=0`` and ``num_workers > 0``.

Workers (``num_workers > 0``) are real processes of ``multiprocessing_context`` (a start
method's name or a context; default: ``multiprocessing``'s default, fork on Linux), so the
dataset's ``__getitem__`` and the collate function run in parallel with the training step.
A batch made in a worker reaches this process as host NumPy arrays and is rebuilt as
``tw.Tensor``\\ s on the current default device, or on the device a dataset's tensor was on
when not the host's (see ``transport``). With the ``spawn`` and ``forkserver`` methods the
dataset, ``collate_fn`` and ``worker_init_fn`` are pickled: a dataset holding
``tw.Tensor``\\ s cannot be (use fork, or load the data in the worker).

``pin_memory`` and ``pin_memory_device`` are accepted for PyTorch's API and do nothing: the
host memory of the backends here needs no pinning. Iterators warn as PyTorch's do (see
``iterator_warnings``).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterable, Iterator
from multiprocessing.context import BaseContext
from typing import Any, Callable

from tensorweaver.random import Generator, check_generator
from tensorweaver.utils.data.collate import default_collate, default_convert
from tensorweaver.utils.data.dataset import Dataset, IterableDataset
from tensorweaver.utils.data.fetch import make_fetcher
from tensorweaver.utils.data.iterator_warnings import warn_about_pinning, yield_count
from tensorweaver.utils.data.multiprocessing_iter import MultiProcessingIter
from tensorweaver.utils.data.sampler import (
    BatchSampler,
    InfiniteConstantSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
)

#: Attributes that fix what an epoch is: PyTorch refuses to change them after __init__.
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


def _context(value: Any, num_workers: int) -> BaseContext | None:
    """``multiprocessing_context`` checked as PyTorch does, a start method's name resolved."""
    if value is None:
        return None
    if num_workers == 0:
        raise ValueError(
            "DataLoader: multiprocessing_context can only be used with multi-process loading "
            f"(num_workers > 0), but got num_workers={num_workers}"
        )
    if isinstance(value, str):
        methods = multiprocessing.get_all_start_methods()
        if value not in methods:
            raise ValueError(
                f"DataLoader: multiprocessing_context option should specify a valid start method "
                f"in {methods!r}, but got multiprocessing_context={value!r}"
            )
        return multiprocessing.get_context(value)
    if not isinstance(value, BaseContext):
        raise TypeError(
            "DataLoader: multiprocessing_context option should be a valid context object or a "
            f"string specifying the start method, but got multiprocessing_context={value!r}"
        )
    return value


class DataLoader:
    """Batches of ``dataset``, as PyTorch's ``DataLoader`` (same arguments and defaults).

    Each iteration is one epoch. A map-style dataset (``__getitem__``, ``__len__``) is read at
    the indices of ``sampler`` (default: every sample once, in order, or shuffled by a
    :class:`RandomSampler` with ``generator`` when ``shuffle``), grouped by ``batch_sampler``
    (default: ``batch_size`` at a time, the last batch smaller unless ``drop_last``); an
    :class:`IterableDataset` is read as a stream, ``batch_size`` samples at a time.
    ``collate_fn`` (default: :func:`default_collate`, or :func:`default_convert` when
    ``batch_size=None`` turns batching off) merges a batch's samples.

    ``num_workers > 0`` loads in that many worker processes, each keeping ``prefetch_factor``
    (default 2) batches in flight; batches come in sampler order unless ``in_order=False``.
    ``persistent_workers`` keeps the workers from one epoch to the next; ``timeout`` (seconds,
    0: none) bounds the wait for a worker's batch (without workers it is unused, where
    PyTorch refuses a nonzero one); ``worker_init_fn(worker_id)`` runs in each worker once it
    is seeded. ``seed`` is TensorWeaver's short form of ``generator``. See the module for
    seeding, the transport of batches and ``pin_memory``.
    """

    def __init__(
        self,
        dataset: Dataset[Any],
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler[Any] | Iterable[Any] | None = None,
        batch_sampler: Sampler[list[Any]] | Iterable[list[Any]] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: str | BaseContext | None = None,
        generator: Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
        seed: int | None = None,
    ) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(
                "DataLoader: num_workers option should be a non-negative integer; use "
                f"num_workers=0 to disable multiprocessing, got {num_workers!r}"
            )
        if timeout < 0:
            raise ValueError(f"DataLoader: timeout option should be non-negative, got {timeout}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "DataLoader: prefetch_factor option could only be specified in multiprocessing; "
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor "
                "to None"
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("DataLoader: prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
        if seed is not None and generator is not None:
            raise ValueError("DataLoader: pass either seed or generator, not both")
        if seed is not None:
            generator = Generator().manual_seed(int(seed))
        if generator is not None:
            check_generator(generator, "DataLoader")

        if isinstance(dataset, IterableDataset):
            for name, value in (("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value is not None:
                    raise ValueError(
                        f"DataLoader with IterableDataset: expected unspecified {name} option, "
                        f"but got {name}={value!r}"
                    )
            if shuffle not in (False, None):
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified shuffle option, but "
                    f"got shuffle={shuffle!r}"
                )
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "DataLoader: batch_sampler option is mutually exclusive with batch_size, "
                    "shuffle, sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise ValueError(
                    "DataLoader: batch_size=None option disables auto-batching and is mutually "
                    "exclusive with drop_last"
                )
        elif isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(
                f"DataLoader: batch_size should be a positive integer, got {batch_size!r}"
            )
        if sampler is None:
            if isinstance(dataset, IterableDataset):
                sampler = InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)  # checks drop_last

        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.drop_last = bool(drop_last)
        self.num_workers = num_workers
        self.collate_fn = collate_fn or (
            default_collate if batch_sampler is not None else default_convert
        )
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = _context(multiprocessing_context, num_workers)
        self.generator = generator
        self.seed = seed
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._iterator: MultiProcessingIter | None = None
        # The iterable dataset's length the last len(self) read, for iterators' warning.
        self._IterableDataset_len_called: int | None = None
        self._initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FROZEN and getattr(self, "_initialized", False):
            raise ValueError(
                f"DataLoader: {name} attribute should not be set after DataLoader is "
                "initialized; make a new DataLoader"
            )
        super().__setattr__(name, value)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = self._IterableDataset_len_called = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self._index_sampler)  # type: ignore[arg-type]

    @property
    def _index_sampler(self) -> Any:
        """What an epoch's fetches are drawn from: the batch sampler, or without batching the
        sampler (for an iterable dataset an endless one, which has no length)."""
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __iter__(self) -> Iterator[Any]:
        if self._iterator is None or not self.persistent_workers:
            warn_about_pinning(self)
        if self.num_workers == 0:
            return _SingleProcessIter(self, self._single_process())
        if not self.persistent_workers:
            return MultiProcessingIter(self)
        if self._iterator is None:
            self._iterator = MultiProcessingIter(self)
        else:
            self._iterator.reset()
        return self._iterator

    def _index_batches(self) -> Iterator[Any]:
        """One epoch's batches of indices (single indices without batching).

        With the loader's own kind of batching over its own samplers, batches are cut from
        the sampler's whole order at once: ``range``\\ s in order, slices of the
        ``RandomSampler``'s int64 order shuffled (what ``BatchSampler`` would yield).
        """
        batches, sampler = self.batch_sampler, self.sampler
        if batches is None:
            return iter(sampler)
        if type(batches) is not BatchSampler or type(batches.sampler) not in (
            SequentialSampler,
            RandomSampler,
        ):
            return iter(batches)
        return _cut(batches.sampler, batches.batch_size, batches.drop_last)

    def _single_process(self) -> Iterator[Any]:
        fetcher = make_fetcher(
            self.dataset,
            isinstance(self.dataset, IterableDataset),
            self.batch_sampler is not None,
            self.collate_fn,
            self.drop_last,
        )
        for indices in self._index_batches():
            try:
                batch = fetcher.fetch(indices)
            except StopIteration:  # an iterable dataset is spent
                return
            yield batch


class _SingleProcessIter:
    """An epoch made in this process: its batches, and as PyTorch's loader iterators, with or
    without workers, the length of what its fetches are drawn from (none for an iterable
    dataset, even one with a length)."""

    def __init__(self, loader: DataLoader, batches: Iterator[Any]) -> None:
        self._loader = loader
        self._batches = batches
        self._yield_count = yield_count(loader)

    def __iter__(self) -> _SingleProcessIter:
        return self

    def __next__(self) -> Any:
        batch = next(self._batches)
        if self._yield_count is not None:
            self._yield_count.count()
        return batch

    def __len__(self) -> int:
        return len(self._loader._index_sampler)


def _cut(sampler: SequentialSampler | RandomSampler, batch_size: int, drop_last: bool) -> Any:
    """``sampler``'s epoch in batches of ``batch_size`` (a generator: drawn when started)."""
    order = sampler.order() if isinstance(sampler, RandomSampler) else None
    n = len(sampler) if order is None else len(order)
    stop = n - n % batch_size if drop_last else n
    for start in range(0, stop, batch_size):
        end = min(start + batch_size, n)
        yield range(start, end) if order is None else order[start:end]
