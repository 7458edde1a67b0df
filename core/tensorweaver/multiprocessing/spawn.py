"""``spawn`` and ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes on this
machine, and raise in the parent when one fails, as ``torch.multiprocessing.spawn``."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable


class ProcessException(Exception):
    """A process started by :func:`start_processes` failed."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.error_pid = msg, error_index, error_pid

    def __reduce__(self) -> tuple:
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """The process's ``fn`` raised; the message carries its traceback."""


class ProcessExitedException(ProcessException):
    """The process exited with a non-zero code, or was killed by a signal."""

    def __init__(
        self,
        msg: str,
        error_index: int,
        error_pid: int,
        exit_code: int,
        signal_name: str | None = None,
    ) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self) -> tuple:
        args = (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)
        return type(self), args


def _run(fn: Callable, i: int, args: tuple, error_file: str) -> None:
    """A child's entry point: ``fn(i, *args)``; a traceback goes to ``error_file``."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # stopped by the parent
    except Exception:
        with open(error_file, "wb") as f:
            pickle.dump(traceback.format_exc(), f)
        sys.exit(1)


class ProcessContext:
    """The processes :func:`start_processes` started (``join=False``)."""

    def __init__(self, processes: list, error_files: list[str]) -> None:
        self.processes, self.error_files = processes, error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait (up to ``timeout`` s) for processes to end; True once all ended well. When
        one fails, stop the others (after ``grace_period`` s) and raise its failure."""
        if not self.sentinels:
            return True
        failed = None
        for sentinel in multiprocessing.connection.wait(list(self.sentinels), timeout=timeout):
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            return not self.sentinels
        self._stop_others(grace_period)
        raise self._failure(failed)

    def _stop_others(self, grace_period: float | None) -> None:
        for p in self.processes:
            if grace_period is not None:
                p.join(grace_period)
            if p.is_alive():
                p.terminate()
        for p in self.processes:
            p.join(30 if grace_period is None else grace_period)
            if p.is_alive():
                p.kill()
                p.join()

    def _failure(self, index: int) -> ProcessException:
        process, error_file = self.processes[index], self.error_files[index]
        if os.access(error_file, os.R_OK):
            with open(error_file, "rb") as f:
                trace = pickle.load(f)
            msg = f"\n\n-- Process {index:d} terminated with the following error:\n{trace}"
            return ProcessRaisedException(msg, index, process.pid)
        code = process.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            msg = f"process {index:d} terminated with signal {name}"
            return ProcessExitedException(msg, index, process.pid, code, name)
        msg = f"process {index:d} terminated with exit code {code:d}"
        return ProcessExitedException(msg, index, process.pid, code)


def start_processes(
    fn: Callable,
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """Start ``nprocs`` processes running ``fn(i, *args)`` (``i`` = 0 .. nprocs-1) with
    ``start_method``; with ``join``, wait for all and raise the first failure, else return
    the :class:`ProcessContext`."""
    context = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        # A fresh name the child writes its traceback to only if it fails.
        with tempfile.NamedTemporaryFile(prefix="tensorweaver-error-", delete=False) as f:
            name = f.name
        os.unlink(name)
        process = context.Process(target=_run, args=(fn, i, args, name), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(name)
    started = ProcessContext(processes, error_files)
    if not join:
        return started
    while not started.join():
        pass
    return None


def spawn(
    fn: Callable,
    args: tuple = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """:func:`start_processes` with the ``spawn`` start method (another one warns, as in
    PyTorch, and is not used)."""
    if start_method != "spawn":
        warnings.warn(
            f"This method only supports start_method=spawn (got: {start_method}).\n"
            "To use a different start_method use:\n\t\t"
            " tw.multiprocessing.start_processes(...)",
            FutureWarning,
            stacklevel=2,
        )
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
