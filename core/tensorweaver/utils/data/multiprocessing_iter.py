"""One pass over a ``DataLoader`` with worker processes (``num_workers > 0``).

The main process sends each batch's indices, tagged with a task number, to the workers in
turn (one index queue each), keeping ``prefetch_factor`` tasks per worker in flight; the
workers fetch, collate and send back packed batches on one result queue. Results are
yielded in task order (``in_order``) or as they arrive. Waiting for a result, the main
process checks every ``STATUS_CHECK_INTERVAL`` seconds that its workers live: a worker that
died raises a RuntimeError naming its pid and exit code, and a wait longer than the
loader's ``timeout`` raises one too. Workers are shut down when the epoch ends (unless
persistent), on those errors, and when the iterator is garbage collected; they are daemon
processes, so interpreter exit never waits for them.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import queue
import signal
import time
from typing import Any

from tensorweaver.utils.data.dataset import IterableDataset
from tensorweaver.utils.data.iterator_warnings import yield_count
from tensorweaver.utils.data.sampler import seed_from
from tensorweaver.utils.data.transport import unpack
from tensorweaver.utils.data.worker import (
    STATUS_CHECK_INTERVAL,
    ExceptionWrapper,
    IterationEnd,
    ResumeIteration,
    WorkerConfig,
    worker_loop,
)

#: How long shutting down waits for workers to finish their task before terminating them.
SHUTDOWN_GRACE_S = 2.0


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"exit code {code}"


class MultiProcessingIter:
    """The iterator ``iter(loader)`` returns when ``loader.num_workers > 0`` (see module)."""

    def __init__(self, loader: Any) -> None:
        self._shutdown = True  # until there is something to shut down
        self._loader = loader
        self._num_workers = loader.num_workers
        # Tasks in flight per worker; at least one, or nothing would ever be asked for.
        self._prefetch = max(1, loader.prefetch_factor)
        self._timeout = loader.timeout
        self._in_order = loader.in_order
        self._persistent = loader.persistent_workers
        context = loader.multiprocessing_context or multiprocessing.get_context()
        base_seed = seed_from(loader.generator)
        self._data_queue = context.Queue()
        self._done_event = context.Event()
        self._index_queues: list[Any] = []
        self._workers: list[Any] = []
        self._shutdown = False
        iterable = isinstance(loader.dataset, IterableDataset)
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            # The main process never needs its unsent indices flushed at exit.
            index_queue.cancel_join_thread()
            config = WorkerConfig(
                dataset=loader.dataset,
                iterable=iterable,
                auto_collation=loader.batch_sampler is not None,
                collate_fn=loader.collate_fn,
                drop_last=loader.drop_last,
                base_seed=base_seed,
                init_fn=loader.worker_init_fn,
                worker_id=worker_id,
                num_workers=self._num_workers,
                parent_pid=os.getpid(),
            )
            worker = context.Process(
                target=worker_loop,
                args=(config, index_queue, self._data_queue, self._done_event),
                daemon=True,
            )
            worker.start()
            self._index_queues.append(index_queue)
            self._workers.append(worker)
        self.reset(first=True)

    def reset(self, first: bool = False) -> None:
        """Start an epoch; persistent workers are told to start theirs anew, and results of
        an epoch left unfinished are dropped."""
        self._batches = self._loader._index_batches()
        self._yield_count = yield_count(self._loader)
        self._send_idx = self._rcvd_idx = 0
        self._task_info: dict[int, list[Any]] = {}  # task -> [worker id] or [worker id, result]
        self._tasks_outstanding = 0
        self._active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first:
            for index_queue in self._index_queues:
                index_queue.put(ResumeIteration())
            pending = self._num_workers
            while pending:
                number, _ = self._get_data()
                pending -= isinstance(number, ResumeIteration)
        for _ in range(self._prefetch * self._num_workers):
            self._try_put_index()

    def _try_put_index(self) -> None:
        """Send the next batch's indices to the next worker still serving this epoch."""
        if self._tasks_outstanding >= self._prefetch * self._num_workers:
            return
        try:
            indices = next(self._batches)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_cycle)
            if self._active[worker_id]:
                break
        else:
            return  # every worker's stream is spent
        self._index_queues[worker_id].put((self._send_idx, indices))
        self._task_info[self._send_idx] = [worker_id]
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self) -> tuple[Any, Any]:
        """The next ``(task number, result)`` from any worker (see module for the checks)."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            try:
                return self._data_queue.get(timeout=wait)
            except queue.Empty:
                pass
            dead = [w for w in self._workers if not w.is_alive()]
            if dead:
                self._shutdown_workers()
                pids = ", ".join(str(w.pid) for w in dead)
                codes = ", ".join(_exit_text(w.exitcode) for w in dead)
                raise RuntimeError(
                    f"DataLoader worker (pid(s) {pids}) exited unexpectedly ({codes})"
                )
            if deadline is not None and time.monotonic() >= deadline:
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def __iter__(self) -> MultiProcessingIter:
        return self

    def __len__(self) -> int:
        return len(self._loader._index_sampler)  # as the single-process iterator's

    def __next__(self) -> Any:
        while True:
            while self._rcvd_idx < self._send_idx:  # skip what will never come
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._active[info[0]]):
                    break
                if info is not None:  # queued to a spent worker, which will not answer
                    del self._task_info[self._rcvd_idx]
                    self._tasks_outstanding -= 1
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[1])
            number, result = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(result, IterationEnd):
                self._active[result.worker_id] = False
                del self._task_info[number]
                self._try_put_index()
            elif number == self._rcvd_idx or not self._in_order:
                # A task yielded ahead of its turn leaves no entry: the loop above skips it.
                del self._task_info[number]
                return self._process(result)
            else:
                self._task_info[number].append(result)

    def _process(self, result: Any) -> Any:
        self._try_put_index()
        if isinstance(result, ExceptionWrapper):
            result.reraise()
        batch = unpack(result)
        if self._yield_count is not None:
            self._yield_count.count()
        return batch

    def _shutdown_workers(self) -> None:
        """Stop every worker (asking first, then terminating), and close the queues."""
        if self._shutdown:
            return
        self._shutdown = True
        self._done_event.set()
        for index_queue in self._index_queues:
            index_queue.put(None)
        deadline = time.monotonic() + SHUTDOWN_GRACE_S
        for worker in self._workers:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
        for worker in self._workers:
            if worker.is_alive():
                worker.terminate()
                worker.join()
        for q in (*self._index_queues, self._data_queue):
            q.cancel_join_thread()
            q.close()

    def __del__(self) -> None:
        try:
            self._shutdown_workers()
        except Exception:  # at interpreter exit the modules it needs may be gone
            pass
