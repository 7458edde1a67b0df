"""Session 33: the layout of an alias over a view's memory (``s[1:].detach()``,
``t.set_(s[2:])``) after a write through it gave it an array of its own, against torch 2.13:
its ``storage_offset()``, ``stride()``, ``is_contiguous()`` and ``data_ptr()`` (before: 0,
C order's strides, True and its own array's address), and those of its views."""

from __future__ import annotations

from typing import Any

from snippet_outcomes import grid, same_each


def _laid(t: Any, s: Any) -> tuple:
    return t.storage_offset(), t.stride(), t.is_contiguous(), t.data_ptr() - s.data_ptr()


def _set_to_a_slice(m: Any) -> Any:
    s = grid(m, 12)
    t = m.empty(0, dtype=m.float64)
    t.set_(s[2:])
    t[0] = -5.0
    return _laid(t, s), s


def _detached_columns(m: Any) -> Any:
    s = grid(m, 12)
    q = s.view(3, 4)[:, 1:].detach()
    q[0, 0] = -1.0
    return _laid(q, s), _laid(q[1:], s), _laid(q.t(), s), q.reshape(-1).stride(), s


def _view_of_an_alias(m: Any) -> Any:
    s = grid(m, 12)
    d = s[3:].detach()
    d[0] = -0.5
    e = d[2:]
    e[0] = -9.0
    return _laid(d, s), _laid(e, s), s


def _alias_kept_apart_from_its_view(m: Any) -> Any:
    s = grid(m, 6)
    v = s[1:]
    d = v.detach()
    d[1] = -8.0
    return _laid(d, s), _laid(v, s), s


def test_alias_of_a_view_keeps_its_layout_after_a_write(spec: str) -> None:
    same_each(
        {
            "set_": _set_to_a_slice,
            "columns": _detached_columns,
            "view": _view_of_an_alias,
            "kept": _alias_kept_apart_from_its_view,
        },
        spec,
    )


def test_untyped_storage_size_of_an_alias(spec: str) -> None:
    def program(m: Any) -> Any:
        s = grid(m, 12)
        d = s[3:].detach()
        d[0] = -0.5
        return d.untyped_storage().size(), s[1:].untyped_storage().size()

    same_each({"size": program}, spec)
