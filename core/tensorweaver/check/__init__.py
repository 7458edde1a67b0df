"""``tw.check()``: every primitive, composite and layer on a device, against NumPy float64.

Each case computes something on the device under check and compares it, outputs and
gradients, with NumPy in float64: primitives straight on the backend object, composites
and layers through the core (their reference being the core's own decompositions on the
NumPy backend in float64, with gradients also checked by finite differences). First comes
one ``primitive/<name>/defined`` case per required primitive: a backend object that lacks
some is still checked, and only the cases that need those fail. The same cases make up the
conformance kit for plugin authors (:mod:`tensorweaver.conformance`).

``tw.check`` is this module itself, made callable, so that both ``tw.check()`` and
``from tensorweaver.check import check`` work.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from typing import TextIO

from tensorweaver.check.report import CaseResult, CheckReport

__all__ = ["CaseResult", "CheckReport", "check"]


def check(
    backend: str | None = None,
    *,
    only: Sequence[str] | None = None,
    stream: TextIO | None = None,
    jobs: int = 1,
) -> CheckReport:
    """Check a device against NumPy float64; return the report (``bool(report)``: all ok).

    ``backend`` is a device spec (``"torch:cuda"``, ``"cunumeric"``); ``None`` checks the
    best device of every installed backend. ``only`` keeps the cases whose id matches one
    of the globs or group prefixes (``["primitive/add/*", "layer"]``). With ``stream``,
    each case's line is written there as soon as it (and every case before it) has run.
    ``jobs > 1`` runs the cases in that many worker processes, with the same results in
    the same order; the workers are spawned, so a script calls it under
    ``if __name__ == "__main__":``.
    """
    from tensorweaver.check.runner import run

    if not (isinstance(jobs, int) and jobs >= 1):
        raise ValueError(f"tw.check: jobs must be a positive int, got {jobs!r}")
    return run(backend, only, stream, jobs)


class _CallableModule(types.ModuleType):
    # `import tensorweaver.check` binds this module as the attribute `tensorweaver.check`,
    # shadowing any function of that name; making the module callable keeps tw.check() working.
    def __call__(
        self,
        backend: str | None = None,
        *,
        only: Sequence[str] | None = None,
        stream: TextIO | None = None,
        jobs: int = 1,
    ) -> CheckReport:
        return check(backend, only=only, stream=stream, jobs=jobs)


sys.modules[__name__].__class__ = _CallableModule
