"""``primitive/<name>/defined``: one check per required primitive that the backend object
defines it, so that a plugin built one primitive at a time fails (or declares as a gap)
exactly the primitives it lacks, while every case that needs only the others runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Callable

from tensorweaver.check.case import Case, Failure, Measure
from tensorweaver.check.context import Context
from tensorweaver.contract.ir import REQUIRED


def _defined(name: str) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        if name in ctx.missing:
            raise Failure(
                name,
                f"the backend object has no callable {name}; every backend object defines "
                "it (see tensorweaver.contract.ir)",
            )
        yield Measure(name, 0.0, 0.0, "defined")

    return run


def cases() -> list[Case]:
    """One case per required primitive, in name order."""
    return [Case(f"primitive/{name}/defined", _defined(name)) for name in sorted(REQUIRED)]
