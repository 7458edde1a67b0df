"""Views of a base that an in-place write missed (session 28): PyTorch rebuilds such a view's
``grad_fn`` when it is next read (``AsStridedBackward0`` over the base's history then), under
whatever grad mode the write ran (``no_grad``, ``inference_mode``); tensorweaver notes the view
stale at the write and rebuilds it when read (autograd/view_regeneration.py), so a write costs
no view op per live view. Each program runs on torch 2.13 and on tensorweaver with only the
module changed (:mod:`snippet_outcomes`); gradients through a rebuilt node are also checked by
finite differences (``tw.autograd.gradcheck``).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
from snippet_outcomes import grad_fn_name, grid, leaf, same_each, walk

Program = Callable[[Any], Any]

#: The grad modes a write may run under.
MODES: dict[str, Callable[[Any], Any]] = {
    "grad": lambda m: contextlib.nullcontext(),
    "no_grad": lambda m: m.no_grad(),
    "inference_mode": lambda m: m.inference_mode(),
}


def _missed_in(mode: str, write: Callable[[Any], Any]) -> Program:
    """Row and slice views of ``b = x * 1``, ``write(b)`` under ``mode``, then a loss of
    the views alone: the leaf's gradient and each view's node."""

    def program(m: Any) -> tuple:
        x = leaf(m, 4, 3)
        b = x * 1
        v, a = b[0], b[:2]
        with MODES[mode](m):
            write(b)
        (v * a[1]).sum().backward()
        return x.grad, walk(v.grad_fn, 2), walk(a.grad_fn, 2), v.requires_grad, v._version

    return program


def _whole_base_in_inference_mode(m: Any) -> tuple:
    """A write of the whole base under inference_mode changes every view's values: the
    views' nodes were lost (grad_fn None, backward refused) before this session."""
    x = leaf(m, 4, 3)
    b = x * 1
    a, c = b[:2], b[2:].t()
    with m.inference_mode():
        b.mul_(2)
    (a * a).sum().backward()
    return x.grad, a, c, walk(a.grad_fn, 2), walk(c.grad_fn, 2), a.is_leaf


def _stale_row(m: Any) -> tuple:
    """``x, b, v``: a leaf ``x``, ``b = x * 1`` and the row view ``v = b[0]``, which a write
    of another row of ``b`` then missed."""
    x = leaf(m, 4, 3)
    b = x * 1
    v = b[0]
    b[1].mul_(2)
    return x, b, v


def _read_between_writes(m: Any) -> tuple:
    """A view read after one missed write, then another: rebuilt again over the newer
    history; reading twice with no write between gives the same node."""
    x, b, v = _stale_row(m)
    first = v.grad_fn
    same = first is v.grad_fn
    b[2].add_(x[3])
    return walk(first, 3), walk(v.grad_fn, 3), same, first is v.grad_fn


def _base_gains_history(m: Any) -> tuple:
    """A view of a tensor without history, whose other row is then written from a leaf: the
    view requires grad through its base, as torch's, and backward reaches the leaf."""
    b = m.zeros(4, 3, dtype=m.float64)
    a = b[:2]
    src = leaf(m, 3)
    b[3].copy_(src)
    flags = (a.requires_grad, a.is_leaf)
    (a.sum() + (b * b).sum()).backward()
    return flags, src.grad, walk(a.grad_fn, 2)


def _base_gains_history_then_written(read_first: bool) -> Program:
    """That view then written in place: torch refuses it as a leaf that requires grad (its
    in-place check reads the view's node as it is, not rebuilt), unless its grad_fn was read
    (rebuilt) first."""

    def program(m: Any) -> tuple:
        b = m.zeros(4, 3, dtype=m.float64)
        a = b[:2]
        src = leaf(m, 3)
        b[3].copy_(src)
        if read_first:
            _ = a.grad_fn  # (rebuilt here)
        a.add_(src)
        (b * b).sum().backward()
        return src.grad, walk(a.grad_fn, 2), walk(b.grad_fn, 2)

    return program


def _written_after_missed(m: Any) -> tuple:
    """A stale view then written itself in place: its write starts from the rebuilt node."""
    x, b, v = _stale_row(m)
    v.mul_(x[2])
    (b * b).sum().backward()
    return x.grad, walk(v.grad_fn, 2), walk(b.grad_fn, 2)


def _many_views(m: Any) -> tuple:
    """Many kept row views written in turn (each write misses all the others), then a loss
    of them all: the gradient, and a few rebuilt nodes."""
    x = leaf(m, 16, 2)
    b = x * 1
    rows = [b[i] for i in range(16)]
    for i, r in enumerate(rows):
        r.mul_(i + 1)
    sum((r * r).sum() for r in rows).backward()
    return x.grad, [walk(rows[i].grad_fn, 1) for i in (0, 7, 15)]


def _view_written_in(mode: str, leaf_base: bool) -> Program:
    """A view written itself under ``mode`` (nothing recorded): its node is rebuilt when
    read, as those of its base's other views and of its own view."""

    def program(m: Any) -> tuple:
        x = m.ones(4, 3, dtype=m.float64, requires_grad=True)
        b = x if leaf_base else x * 1
        v, w = b[0], b[1]
        u = v[1:]
        with MODES[mode](m):
            v.mul_(2)
        (v * w + u.sum()).sum().backward()
        return [walk(t.grad_fn, 2) for t in (v, w, u)], x.grad, v._version

    return program


def _printed(m: Any) -> tuple:
    """A stale view printed before anything read its grad_fn: the rebuilt node's name."""
    x, b, v = _stale_row(m)
    return repr(v).rsplit("grad_fn=", 1)[-1], walk(v.grad_fn, 2)


#: The bases of :func:`_written_through_data`'s views, from a leaf ``x``: a leaf that is a
#: view itself (:func:`leaf`, a reshape), one that is none (a parameter's case), a non-leaf.
BASES: dict[str, Callable[[Any], Any]] = {
    "view_leaf": lambda m: leaf(m, 4, 3),
    "leaf": lambda m: grid(m, 4, 3).clone().requires_grad_(),
    "non_leaf": lambda m: leaf(m, 4, 3),
}


def _written_through_data(base: str, then_no_grad: bool) -> Program:
    """Row views of a base written through ``.data`` (an optimizer's ``p.data.add_``): their
    values follow, no version moves and each keeps its grad_fn (nothing to regenerate); then
    (``then_no_grad``) a write under ``no_grad`` moves the version and rebuilds them."""

    def program(m: Any) -> tuple:
        x = BASES[base](m)
        b = x * 1 if base == "non_leaf" else x
        rows = [b[i] for i in range(4)]
        b.data.add_(m.ones(4, 3, dtype=m.float64), alpha=-0.5)
        after_data = [(r.detach().clone(), r._version, walk(r.grad_fn, 2)) for r in rows]
        if then_no_grad:
            with m.no_grad():
                b.mul_(2)
        sum((r * r).sum() for r in rows).backward()
        return after_data, [(r, r._version, walk(r.grad_fn, 2)) for r in rows], x.grad

    return program


PROGRAMS: dict[str, Program] = {
    **{
        f"view_written_{mode}_{kind}": _view_written_in(mode, kind == "leaf")
        for mode in ("no_grad", "inference_mode")
        for kind in ("leaf", "non_leaf")
    },
    **{
        f"{mode}_{name}": _missed_in(mode, write)
        for mode in MODES
        for name, write in {
            "row": lambda b: b[3].mul_(2),
            "column_block": lambda b: b[2:, 1:].add_(1),
        }.items()
    },
    "whole_base_in_inference_mode": _whole_base_in_inference_mode,
    "read_between_writes": _read_between_writes,
    "base_gains_history": _base_gains_history,
    "base_gains_history_then_written": _base_gains_history_then_written(False),
    "base_gains_history_read_then_written": _base_gains_history_then_written(True),
    "written_after_missed": _written_after_missed,
    "many_views": _many_views,
    "printed": _printed,
    **{
        f"written_through_data_{base}{'_then_no_grad' * then}": _written_through_data(base, then)
        for base in BASES
        for then in (False, True)
        if base != "view_leaf" or not then
    },
}


def test_views_a_write_missed(spec: str) -> None:
    same_each(PROGRAMS, spec)


def test_missed_view_not_rebuilt_until_read(backend: str) -> None:
    """The write leaves each view it missed as it was (no view op replayed per live view,
    which made writes quadratic in the views kept); reading the view's grad_fn rebuilds it."""
    x = tw.ones(8, 3, dtype=tw.float64, requires_grad=True)
    b = x * 1
    rows = [b[i] for i in range(8)]
    before = [r._node for r in rows]
    b[0].mul_(2)
    assert all(r._node is n for r, n in zip(rows[1:], before[1:]))
    assert grad_fn_name(rows[5]) == "AsStridedBackward0"
    assert rows[5]._node is not before[5] and rows[6]._node is before[6]


@pytest.mark.parametrize("mode", list(MODES))
def test_gradients_through_rebuilt_nodes(backend: str, mode: str) -> None:
    """Finite differences of a loss of views rebuilt after writes that missed them (one that
    depends on the input, one under ``mode``)."""

    def f(x: Any) -> Any:
        b = x * x
        v, a = b[0], b[:2].t()
        b[3].mul_(x[2])  # (recorded: misses v and a)
        with MODES[mode](tw):
            b[2].add_(1)
        assert grad_fn_name(v) == "AsStridedBackward0"
        return (v[:2] * a[1]).sum() + (a * a).sum() + (b * b).sum()

    x = tw.tensor(np.random.default_rng(3).standard_normal((4, 3)), requires_grad=True)
    assert tw.autograd.gradcheck(f, (x,))


def _retained_before_and_after(m: Any) -> tuple:
    x = leaf(m, 4, 3)
    b = x * 1
    v = b[0]
    v.retain_grad()
    seen: list = []
    v.register_hook(lambda g: seen.append(g.clone()))
    y = (v * 2).sum()
    b[2].mul_(3)
    (y + (v * v).sum()).backward()
    return v.grad, x.grad, seen


def test_retain_grad_and_hooks_of_a_stale_view(spec: str) -> None:
    same_each({"retained": _retained_before_and_after}, spec)


def _grad_of_stale_view(m: Any) -> tuple:
    x = leaf(m, 4, 3)
    b = x * 1
    v = b[0]
    loss = (v * v).sum()  # (recorded on v's node before the write)
    b[1].mul_(2)
    return m.autograd.grad(loss, v, allow_unused=True)


def test_grad_with_respect_to_a_stale_view(spec: str) -> None:
    same_each({"grad": _grad_of_stale_view}, spec)


def test_views_of_a_view_leaf_written_under_no_grad(spec: str) -> None:
    same_each({"view_leaf_no_grad": _written_through_data("view_leaf", True)}, spec)
