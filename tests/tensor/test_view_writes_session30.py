"""Writes into a tensor with many live views (session 30): where the write goes into memory
the views share (memory shared with NumPy; a base whose live views are many, written into
its own array rather than rebound), the views are not read again, only their versions and
histories noted. Each program runs on torch 2.13 and on tensorweaver with only the module
changed (:mod:`snippet_outcomes`): the views' values, versions and ``grad_fn`` after writes
into the base and into a view, under ``no_grad`` (an optimizer's step) and with grad, and
backward through views written after the forward.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
from snippet_outcomes import grid, leaf, refused_in_place, same_each, walk

Program = Callable[[Any], Any]

DEVICES = ["numpy", "torch:cpu"]


def _views_of(x: Any) -> list:
    """Many live views of the 2-d ``x``: each row, a transpose, a flat reshape, a column and
    a view of a view."""
    return [*(x[i] for i in range(x.shape[0])), x.t(), x.view(-1), x[:, 1], x[2:][1]]


def _base(m: Any, requires_grad: bool = False) -> Any:
    """A 24 x 3 tensor of its own (no view: ``grid`` reshapes an arange)."""
    return grid(m, 24, 3).clone().requires_grad_(requires_grad)


def _seen(views: list) -> tuple:
    return tuple(views), tuple(v._version for v in views)


def _plain_base_written(m: Any) -> tuple:
    x = _base(m)
    views = _views_of(x)
    with m.no_grad():
        x.add_(1.0)
        x.mul_(m.arange(3.0, dtype=m.float64))
    x.copy_(x.flip(0))  # (a source over the written memory itself)
    x[5] = -1.0
    x.zero_()[3].fill_(2.0)
    return _seen(views), x._version


def _written_through_a_view(m: Any) -> tuple:
    x = _base(m)
    views = _views_of(x)
    x.add_(1.0)
    views[4].mul_(3.0)  # (a row: into the base, then the others follow)
    views[-3][7] = 0.5  # (the flat reshape)
    views[-4].add_(1.0)  # (the transpose)
    return _seen(views), x._version


def _stepped_under_no_grad(x: Any, m: Any) -> tuple:
    # an optimizer's step of a leaf whose views were taken with grad: their grad_fn is
    # rebuilt over the leaf when next read, and backward goes through the new values
    views = _views_of(x)
    with m.no_grad():
        x.sub_(0.5 * grid(m, 24, 3))
        x.mul_(2.0)
    loss = sum((v * v).sum() for v in views[:4]) + views[-3].sum() + (views[-4] ** 3).sum()
    loss.backward()
    return _seen(views), x.grad, walk(views[0].grad_fn, 2), walk(views[-4].grad_fn, 2)


def _leaf_stepped_under_no_grad(m: Any) -> tuple:
    return _stepped_under_no_grad(_base(m, True), m)


def _view_leaf_stepped_under_no_grad(m: Any) -> tuple:
    # (the leaf is a view itself: torch's reshape of the arange)
    return _stepped_under_no_grad(leaf(m, 24, 3), m)


def _written_after_forward(m: Any) -> tuple:
    # a view the graph saved, then the base written: backward refuses, as torch's
    x = _base(m, True)
    b = x * 1
    views = _views_of(b)
    loss = (views[2] * views[3]).sum()
    with m.no_grad():
        b.add_(1.0)
    return refused_in_place(loss.backward), _seen(views)


def _non_leaf_base_written_with_grad(m: Any) -> tuple:
    x = _base(m, True)
    b = x * 1
    views = _views_of(b)
    b.mul_(x)  # (the base's history changes: each view's grad_fn is rebuilt over it)
    loss = sum(v.sum() for v in views[:3]) + (views[-4] * views[-4]).sum()
    loss.backward()
    return _seen(views), x.grad, walk(views[1].grad_fn, 3), walk(views[-2].grad_fn, 3)


def _data_write(m: Any) -> tuple:
    # a write through .data: the views see it; no version the tensor shares moves
    x = _base(m, True)
    views = _views_of(x)
    loss = (views[1] * views[1]).sum()
    x.data.add_(1.0)
    x.data[2].mul_(2.0)
    loss.backward()  # (torch: no version moved, so the new values are read)
    return _seen(views), x._version, x.grad


def _aliases_and_views(m: Any) -> tuple:
    x = _base(m)
    d = x.detach()
    views = _views_of(x)
    dv = d[1:3]
    with m.no_grad():
        x.add_(2.0)
    d.mul_(0.5)
    return _seen(views), d, dv, d._version, dv._version, x._version


def _host_shared(m: Any) -> tuple:
    a = np.arange(72.0).reshape(24, 3)
    x = m.from_numpy(a).requires_grad_()
    views = _views_of(x)
    with m.no_grad():
        x.add_(1.0)
        views[3].mul_(2.0)
    a[0] = -7.0  # (NumPy's write: seen by the tensor and its views)
    loss = (views[0] * views[1]).sum() + views[-3].sum()
    loss.backward()
    return _seen(views), x._version, x.grad, walk(views[0].grad_fn, 2)


def _host_shared_data_views(m: Any) -> tuple:
    # writes through .data and a view of it: its counter is its own (torch: the tensor's
    # stays 0), and a later write of the tensor leaves .data's counter
    y = m.from_numpy(np.arange(4.0)).requires_grad_()
    z = (y * y).sum()
    d = y.data
    d.add_(1.0)
    d[1:3].mul_(2.0)
    v = d[0]
    v.fill_(7.0)
    versions = (y._version, d._version, v._version)
    z.backward()
    with m.no_grad():
        y.add_(1.0)
    return versions, y.grad, y, (y._version, d._version)


PROGRAMS: dict[str, Program] = {
    "plain base written": _plain_base_written,
    "written through a view": _written_through_a_view,
    "leaf stepped under no_grad": _leaf_stepped_under_no_grad,
    "written after forward": _written_after_forward,
    "non-leaf base written with grad": _non_leaf_base_written_with_grad,
    ".data write": _data_write,
    "aliases and views": _aliases_and_views,
    "host-shared": _host_shared,
    "host-shared .data and its views": _host_shared_data_views,
}


@pytest.mark.parametrize("spec", DEVICES)
def test_many_views_after_writes_as_torch(spec: str) -> None:
    same_each(PROGRAMS, spec)


@pytest.mark.parametrize("spec", DEVICES)
def test_views_of_a_view_leaf_stepped_under_no_grad(spec: str) -> None:
    same_each({"view leaf stepped": _view_leaf_stepped_under_no_grad}, spec)


@pytest.mark.parametrize("spec", DEVICES)
def test_views_written_into_memory_without_view_ops(spec: str, monkeypatch: Any) -> None:
    """A base with many live views written under no_grad replays no view op for them where
    the write went into the memory they share: NumPy's own array (numpy), memory shared
    with NumPy (both); their values still follow."""
    from tensorweaver.ops import index

    calls = []
    real = index.getitem
    monkeypatch.setattr(index, "getitem", lambda *a: calls.append(1) or real(*a))
    with tw.device(spec):
        a = np.zeros((16, 3))
        shared = tw.from_numpy(a).requires_grad_()
        plain = tw.zeros(16, 3, dtype=tw.float64, requires_grad=True)
        bases = [shared] + ([plain] if spec == "numpy" else [])
        for x in bases:
            rows = [x[i] for i in range(16)]
            calls.clear()
            with tw.no_grad():
                x.add_(1.0)
            assert calls == []
            assert [r.tolist() for r in rows] == [[1.0] * 3] * 16
            assert [r._version for r in rows] == [1] * 16


def test_data_sets_the_slots_init_sets() -> None:
    """``Tensor.data`` builds its alias without ``__init__``: it sets every slot ``__init__``
    sets, with ``__init__``'s values but for the alias link and its own counter."""
    from tensorweaver.tensor import Tensor

    t = tw.ones(3, requires_grad=True)
    made, data = Tensor(t.native, t.backend, t.dtype), t.data
    slots = [s for s in Tensor.__slots__ if s != "__weakref__"]
    assert [s for s in slots if not hasattr(data, s)] == [s for s in slots if not hasattr(made, s)]
    differ = {s for s in slots if getattr(made, s, None) is not getattr(data, s, None)}
    assert differ == {"_alias_of", "_own_counter"}
