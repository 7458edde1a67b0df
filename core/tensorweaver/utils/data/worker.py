"""What runs in a ``DataLoader`` worker process, and ``get_worker_info()``.

A worker seeds its random streams, runs ``worker_init_fn``, then serves the tasks of its
index queue: each is ``(task number, indices)``; it fetches and collates that batch and
puts ``(task number, result)`` on the loader's result queue, where a result is the packed
batch (see ``transport``), an :class:`ExceptionWrapper`, or :class:`IterationEnd` once its
copy of an iterable dataset is spent. ``None`` on the index queue ends the worker; a
:class:`ResumeIteration` starts a new epoch (persistent workers). A worker also ends when
its parent process is gone, or when the loader shuts down.

A worker makes its tensors on the host, NumPy's device (``tw.device("numpy")`` around all it
runs: the dataset, ``worker_init_fn``, the collate function): they are sent to the main
process as host arrays anyway, and a forked process should not drive an accelerator's
runtime that its parent started. The main process rebuilds them on its default device
(and a tensor the dataset keeps on another device on that device: see ``transport``).
"""

from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.registry import DEFAULT_BACKEND as HOST
from tensorweaver.utils.data.fetch import make_fetcher
from tensorweaver.utils.data.transport import pack

#: How often (seconds) a waiting worker checks that its parent lives, and a waiting main
#: process checks that its workers do.
STATUS_CHECK_INTERVAL = 0.2


class WorkerInfo:
    """Who this worker is: ``id`` (0 .. num_workers - 1), ``num_workers``, ``seed`` (its
    streams' seed) and ``dataset`` (this process's copy). Read-only."""

    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, id: int, num_workers: int, seed: int, dataset: Any) -> None:
        for name, value in zip(self.__slots__, (id, num_workers, seed, dataset)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in ("id", "num_workers", "seed"))
        return f"WorkerInfo({fields}, dataset={type(self.dataset).__name__})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a ``DataLoader`` worker, its :class:`WorkerInfo`; ``None`` in the main process.

    An ``IterableDataset`` reads it in ``__iter__`` to yield only its share of the stream
    (every worker iterates its own copy of the whole dataset otherwise).
    """
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process: its type and its
    traceback's text."""

    def __init__(self, worker_id: int) -> None:
        exc_type, exc, tb = sys.exc_info()
        self.exc_type: type[BaseException] = exc_type or RuntimeError
        trace = "".join(traceback.format_exception(exc_type, exc, tb))
        self.message = (
            f"Caught {self.exc_type.__name__} in DataLoader worker process {worker_id}.\n"
            f"Original {trace}"
        )
        try:
            pickle.dumps(self.exc_type)
        except Exception:  # a class the main process cannot import (defined in a function)
            self.exc_type = RuntimeError

    def reraise(self) -> None:
        """Raise the worker's exception type with the worker's traceback as its message (a
        RuntimeError when that type cannot be made from one message)."""
        if self.exc_type is KeyError:
            raise KeyError(_Text(self.message))
        try:
            exception = self.exc_type(self.message)
        except Exception:
            raise RuntimeError(self.message) from None
        raise exception


class _Text(str):
    """A message whose repr is itself: KeyError prints its argument's repr, which would show
    the traceback as one line of escapes."""

    def __repr__(self) -> str:
        return str(self)


class IterationEnd:
    """A worker's copy of an iterable dataset is spent."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class ResumeIteration:
    """Start a new epoch (persistent workers); a worker echoes it back when it has."""


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed this process's streams for worker ``worker_id``; returns its seed.

    As PyTorch: the seed is ``base_seed + worker_id``, for ``tw.manual_seed`` (every backend
    and ``tw.default_generator``) and Python's ``random``. NumPy's legacy global stream
    (``np.random.seed``) is seeded too, as PyTorch does, from a ``SeedSequence`` of
    ``(worker_id, base_seed)``: forked workers would otherwise all repeat the parent's
    NumPy stream, a classic source of identical augmentations.
    """
    seed = base_seed + worker_id
    random.seed(seed)
    tw.manual_seed(seed)
    state = np.random.SeedSequence([worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32])
    np.random.seed(state.generate_state(4))
    return seed


@dataclass(frozen=True)
class WorkerConfig:
    """What a worker is given besides its queues."""

    dataset: Any
    iterable: bool  # an IterableDataset
    auto_collation: bool  # batches (False: batch_size=None)
    collate_fn: Callable
    drop_last: bool
    base_seed: int
    init_fn: Callable[[int], None] | None
    worker_id: int
    num_workers: int
    parent_pid: int

    def fetcher(self) -> tuple[Any, ExceptionWrapper | None]:
        """A fresh fetcher (an iterable dataset's stream restarts), or the error making it."""
        try:
            fetcher = make_fetcher(
                self.dataset, self.iterable, self.auto_collation, self.collate_fn, self.drop_last
            )
        except Exception:
            return None, ExceptionWrapper(self.worker_id)
        return fetcher, None


def worker_loop(config: WorkerConfig, index_queue: Any, data_queue: Any, done_event: Any) -> None:
    """The body of a worker process (see the module)."""
    try:
        with tw.device(HOST):
            _serve(config, index_queue, data_queue, done_event)
    except KeyboardInterrupt:
        pass  # Ctrl-C reaches the whole process group: the main process handles it
    if done_event.is_set():
        # Results still buffered are not wanted: do not block exit flushing them.
        data_queue.cancel_join_thread()
    data_queue.close()


def _serve(config: WorkerConfig, index_queue: Any, data_queue: Any, done_event: Any) -> None:
    """Seed, initialise, then answer tasks until told to stop."""
    global _worker_info
    seed = seed_worker(config.base_seed, config.worker_id)
    _worker_info = WorkerInfo(config.worker_id, config.num_workers, seed, config.dataset)
    error = None
    try:
        if config.init_fn is not None:
            config.init_fn(config.worker_id)
    except Exception:
        error = ExceptionWrapper(config.worker_id)
    fetcher, fetcher_error = config.fetcher()
    error = error or fetcher_error  # reported as the result of the first task
    spent = False
    while True:
        try:
            task = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
        except queue.Empty:
            # Shut down, or the main process is gone (nobody will read the results). The
            # ``None`` may never come: a loader collected with its iterator in one cycle
            # has its index queues closed before the iterator's __del__ sends it.
            if done_event.is_set() or os.getppid() != config.parent_pid:
                return
            continue
        if task is None:
            return
        if isinstance(task, ResumeIteration):
            data_queue.put((task, None))
            fetcher, error = config.fetcher()
            spent = False
            continue
        if done_event.is_set() or spent:
            continue  # nothing more is wanted this epoch
        number, indices = task
        result: Any
        if error is not None:
            result, error = error, None
        else:
            try:
                result = pack(fetcher.fetch(indices))
            except StopIteration:
                result, spent = IterationEnd(config.worker_id), True
            except Exception:
                result = ExceptionWrapper(config.worker_id)
        data_queue.put((number, result))
