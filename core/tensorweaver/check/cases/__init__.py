"""Every check case, in the order ``tw check`` runs them.

Each module holds one group and returns its cases from ``cases()``: primitives straight
on the backend object (data, elementwise, reduce, movement, index, linalg), then through
the core (broadcasting, negative axes, views, NaN), host transfer, autograd, the optional
special functions, composites and layers.

Every primitive that takes an array has a case ``primitive/<name>/<layout>`` for each
layout of :mod:`tensorweaver.check.layouts` it accepts (all but 0-d for those that act
along an axis), and every composite and autograd case runs, forward and backward, in the
layouts that keep its shapes and on an empty batch (its inputs and upstream gradients with
zero rows): :func:`all_cases` refuses a case set that misses one.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from tensorweaver.check.case import Case
from tensorweaver.check.layouts import EDGE
from tensorweaver.contract.ir import REQUIRED

#: Primitives that take no backend array: no layout applies.
NO_ARRAY = frozenset(
    {"from_host", "full", "arange", "seed", "random_uniform", "random_normal", "random_integers"}
)
#: Primitives that act along an axis (or on matrices): a 0-d array is no input of theirs.
ALONG_AXES = frozenset(
    {"sum", "prod", "max", "min", "any", "all", "argmax", "argmin", "cumsum", "pad", "cat"}
    | {"gather", "take", "scatter", "scatter_add", "matmul"}
)


def missing_layouts(ids: Iterable[str]) -> list[str]:
    """The ``primitive/<name>/<layout>`` cases the required primitives lack in ``ids``."""
    have = set(ids)
    return [
        f"primitive/{name}/{layout}"
        for name in sorted(REQUIRED - NO_ARRAY)
        for layout in EDGE
        if not (layout == "0-d" and name in ALONG_AXES) and f"primitive/{name}/{layout}" not in have
    ]


@lru_cache(maxsize=1)
def all_cases() -> tuple[Case, ...]:
    from tensorweaver.check.cases import (
        autograd,
        compiled,
        complex,
        composites,
        core,
        data,
        elementwise,
        fft,
        foreach,
        host,
        index,
        layers,
        linalg,
        memory,
        movement,
        reduce,
        rng_state,
        special,
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
        special,
        complex,
        fft,
        composites,
        layers,
        foreach,
        memory,
        compiled,
        rng_state,
    ]
    cases = tuple(case for group in groups for case in group.cases())
    ids = [c.id for c in cases]
    assert len(set(ids)) == len(ids), "duplicate case ids"
    assert not missing_layouts(ids), f"primitives without layout cases: {missing_layouts(ids)}"
    return cases
