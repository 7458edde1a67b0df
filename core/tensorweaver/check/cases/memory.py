"""The optional ``memory_users`` (API 2.12), which lets the core write an in-place result into a
base with many live views: on arrays made by the backend's own primitives, its answer must
count exactly the references to the base that the views hold, and must never let the core's
count match where an array it was not told about uses the memory. A write into the base
(``write_into``) must then be seen by every view."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from tensorweaver.check.case import Case, Failure, Measure, Skip
from tensorweaver.check.context import Context
from tensorweaver.contract import dtypes as d

INF = float("inf")


class _Holder:
    """One attribute holding an array, as a tensor holds its native: a count of the
    references to the array then reads the attribute alone, with no local among them."""

    __slots__ = ("value",)


def _references(holder: _Holder) -> int:
    return sys.getrefcount(holder.value)


def _views(ctx: Context, a: Any) -> list[Any]:
    """Views of the (3, 4) ``a`` by the view primitives, and a view of one of them."""
    views = [
        ctx.call("permute", a, (1, 0)),
        ctx.call("slice", a, (1, 0), (3, 4), (1, 1)),
        ctx.call("reshape", a, (12,)),
    ]
    views.append(ctx.call("slice", views[0], (0, 1), (4, 3), (2, 1)))
    return views


def _measure(what: str, ok: bool, detail: str) -> Measure:
    return Measure(what, 0.0 if ok else INF, 0.0, detail)


def _counts(ctx: Context) -> Iterator[Measure]:
    users = getattr(ctx.backend, "memory_users", None)
    if users is None:
        raise Skip(f"{ctx.device} has no memory_users (optional: the core rereads each view)")
    storage = getattr(ctx.backend, "storage", None)
    if storage is None or getattr(ctx.backend, "write_into", None) is None:
        raise Failure("memory_users", "a backend defining it defines write_into and storage")
    ctx.require(d.float64)
    base = _Holder()
    base.value = ctx.call("from_host", np.arange(12.0).reshape(3, 4), d.float64)
    alone = _references(base)
    answer = users(base.value, [])
    yield _measure(
        "memory_users",
        answer is None or answer == 0,
        f"{answer} references held by no view (a new array with no view: 0, or None)",
    )
    views = _views(ctx, base.value)
    if any(storage(v) is not storage(base.value) for v in views):
        raise Skip("a view primitive copied: no views over one memory to count")
    held = _references(base) - alone
    answer = users(base.value, views)
    yield _measure(
        "memory_users",
        answer is None or answer == held,
        f"said its {len(views)} views hold {answer} references to the base; they hold {held}",
    )
    for i in range(len(views)):
        told = views[:i] + views[i + 1 :]
        answer = users(base.value, told)
        yield _measure(
            "memory_users",
            answer is None or answer != held,
            f"with view {i} left out, {answer}: the core's count would match while an array "
            "it was not told about sees the memory (answer None, or a count that differs)",
        )
    answer = users(views[1], [])
    yield _measure(
        "memory_users",
        answer is None,
        f"{answer} for a view of another array (None: a write into it changes that array)",
    )
    if ctx.call("write_into", base.value, ctx.call("neg", base.value)):
        want = -np.arange(12.0).reshape(3, 4)
        yield ctx.check("write_into: a view sees it", views[0], want.T, d.float64, 0.0)
        yield ctx.check("write_into: a view of a view", views[3], want.T[::2, 1:], d.float64, 0.0)


def cases() -> list[Case]:
    return [Case("optional/memory_users/views", _counts)]
