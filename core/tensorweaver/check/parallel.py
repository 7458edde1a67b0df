"""``tw check --jobs N``: cases run in N worker processes, results in the serial order.

Each worker is a fresh interpreter (spawned: a forked copy of a process that has started
a backend's threads or runtime is not safe) that creates each device's backend object
once and evaluates the cases it is handed by id. A case's inputs are seeded by its id and
each case starts from a clean context, so a result does not depend on which worker ran
it or what ran before; workers pay for their own imports and compilation, which is what
parallel runs win back on a JIT-compiling backend.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor

from tensorweaver.check.case import Case, raised
from tensorweaver.check.context import Context
from tensorweaver.check.report import FAIL, CaseResult

#: Cases a worker takes at a time: few enough to balance slow layers, enough to keep the
#: traffic small.
CHUNK = 4

#: A worker's devices and cases, made on its first task.
_contexts: dict[str, Context] = {}
_cases: dict[str, Case] = {}


def _evaluate(task: tuple[str, str]) -> CaseResult:
    from tensorweaver.check.runner import context, evaluate, every_case

    device, case_id = task
    if device not in _contexts:
        try:
            _contexts[device] = context(device)
        except Exception as exc:  # the parent created it: say that this process could not
            why = f"a worker process could not create the backend ({raised(exc)})"
            return CaseResult(device, case_id, FAIL, float("inf"), 0.0, why)
    if not _cases:
        _cases.update((c.id, c) for c in every_case())
    return evaluate(_cases[case_id], _contexts[device])


def evaluate_all(tasks: Sequence[tuple[str, str]], jobs: int) -> Iterator[CaseResult]:
    """The result of each ``(device, case id)`` in ``tasks``, in order, from ``jobs`` workers."""
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=spawn) as pool:
        yield from pool.map(_evaluate, tasks, chunksize=CHUNK)
