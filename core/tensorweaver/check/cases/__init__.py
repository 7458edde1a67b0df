"""Every check case, in the order ``tw check`` runs them.

Each module holds one group and returns its cases from ``cases()``: primitives straight
on the backend object (data, elementwise, reduce, movement, index, linalg), then through
the core (broadcasting, negative axes, views, NaN), host transfer, autograd, composites
and layers.
"""

from __future__ import annotations

from functools import lru_cache

from tensorweaver.check.case import Case


@lru_cache(maxsize=1)
def all_cases() -> tuple[Case, ...]:
    from tensorweaver.check.cases import (
        autograd,
        composites,
        core,
        data,
        elementwise,
        host,
        index,
        layers,
        linalg,
        movement,
        reduce,
    )

    groups = [
        data,
        elementwise,
        reduce,
        movement,
        index,
        linalg,
        core,
        host,
        autograd,
        composites,
        layers,
    ]
    cases = tuple(case for group in groups for case in group.cases())
    ids = [c.id for c in cases]
    assert len(set(ids)) == len(ids), "duplicate case ids"
    return cases
