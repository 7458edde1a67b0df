"""Updates written through ``.data`` and ``detach()`` aliases (``p.data.add_(p.grad,
alpha=-lr)``, the word-LM example's step) as PyTorch makes them: values, version counters,
views that see the change, and the overlap refusals of in-place methods and ``out=`` whose
operand shares part of the written memory (the cheap test of the operands' memory roots
in ops/out_arguments.py ``_refuse_overlapping_operands`` must refuse what torch refuses)."""

from __future__ import annotations

from typing import Any

from snippet_outcomes import grid, same_each


def _step(m: Any) -> Any:
    p = m.nn.Parameter(grid(m, 2, 3))
    p.grad = grid(m, 2, 3) * 0.5
    row = p[1]  # a view made before: it sees the update
    before = p._version
    for _ in range(2):
        p.data.add_(p.grad, alpha=-0.1)
    return p, row, p._version - before, row._version


def _alias_versions(m: Any) -> Any:
    p = m.nn.Parameter(grid(m, 4))
    d, e = p.data, p.detach()
    d.sub_(grid(m, 4), alpha=2)
    return p, d._version, e._version, p._version, e


def _into_alias_of_the_operand(m: Any) -> Any:
    x = grid(m, 5)
    x.data.add_(x, alpha=2)  # the very same elements: an in-place write
    return x


def _into_transposed_alias_of_the_operand(m: Any) -> Any:
    x = grid(m, 2, 2)
    x.data.t().add_(x, alpha=2)  # same memory, other strides: torch refuses
    return x


def _partial_views_of_one_memory(m: Any) -> Any:
    x = grid(m, 6)
    x.data[1:].add_(x[:-1], alpha=2)
    return x


def _partial_aliases_of_one_memory(m: Any) -> Any:
    x = grid(m, 6)
    x.detach()[:3].add_(x.data[2:5], alpha=-1)
    return x


def _interleaved_views(m: Any) -> Any:
    x = grid(m, 6)
    x.data[::2].add_(x[1::2], alpha=3)  # not dense: torch cannot tell, and writes
    return x


def _apart_memories(m: Any) -> Any:
    x, y = grid(m, 4), grid(m, 4) * 3
    x.data.add_(y.data, alpha=-1)
    x.detach().sub_(y.detach()[:1])
    return x, y


def _out_into_alias_over_input(m: Any) -> Any:
    x = grid(m, 6)
    m.add(x[:-1], x[:-1], alpha=2, out=x.data[1:])
    return x


def _sub_keeps_views_current(m: Any) -> Any:
    x = grid(m, 3, 2)
    col = x.t()[0]
    x.data.sub_(grid(m, 3, 2), alpha=0.5)
    x.detach().add_(x.data, alpha=1)  # the same elements through two aliases
    return x, col


PROGRAMS = {
    "step": _step,
    "alias_versions": _alias_versions,
    "into_alias_of_the_operand": _into_alias_of_the_operand,
    "into_transposed_alias_of_the_operand": _into_transposed_alias_of_the_operand,
    "partial_views_of_one_memory": _partial_views_of_one_memory,
    "partial_aliases_of_one_memory": _partial_aliases_of_one_memory,
    "interleaved_views": _interleaved_views,
    "apart_memories": _apart_memories,
    "out_into_alias_over_input": _out_into_alias_over_input,
    "sub_keeps_views_current": _sub_keeps_views_current,
}


def test_updates_through_aliases_like_torch(backend: str) -> None:
    same_each(PROGRAMS, backend)
