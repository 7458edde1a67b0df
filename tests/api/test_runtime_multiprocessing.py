"""tw.multiprocessing: Python's module re-exported, and torch.multiprocessing.spawn's
semantics on one machine. The workers live here, in a module that imports little, because
``spawn`` children import it."""

from __future__ import annotations

import multiprocessing

import pytest
import tensorweaver.multiprocessing as wmp


def _work(rank: int, queue) -> None:
    queue.put(rank * 10)


def _fail(rank: int) -> None:
    if rank == 1:
        raise KeyError("boom in rank 1")


def _exit(rank: int) -> None:
    raise SystemExit(3)


def test_reexports_python_multiprocessing() -> None:
    for name in ("Process", "Queue", "get_context", "set_start_method", "Pool", "Manager"):
        assert getattr(wmp, name) is getattr(multiprocessing, name)


def test_spawn_runs_each_rank_and_forwards_failures() -> None:
    queue = wmp.get_context("spawn").SimpleQueue()
    assert wmp.spawn(_work, args=(queue,), nprocs=2) is None
    assert sorted(queue.get() for _ in range(2)) == [0, 10]
    with pytest.raises(wmp.ProcessRaisedException, match="boom in rank 1") as info:
        wmp.spawn(_fail, nprocs=2)
    assert info.value.error_index == 1


def test_start_processes_without_join_and_exit_codes() -> None:
    context = wmp.start_processes(_exit, nprocs=1, join=False, start_method="fork")
    assert len(context.pids()) == 1
    with pytest.raises(wmp.ProcessExitedException, match="exit code 3") as info:
        while not context.join():
            pass
    assert info.value.exit_code == 3
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        wmp.spawn(_work, args=(wmp.get_context("spawn").SimpleQueue(),), start_method="fork")
