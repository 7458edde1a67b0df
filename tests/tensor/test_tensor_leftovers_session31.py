"""Older Tensor defects fixed in the thirty-first session, each compared with torch 2.13: the
rebuilt node of a view of a leaf that is itself a view, the version counter of a ``.data``
of host-shared memory and its ``detach()``, and ``nn.Buffer(t)`` as a plain tensor with a
``persistent`` flag; the version counter of each ``from_numpy`` tensor (fixed in the
thirty-second session on numpy)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from snippet_outcomes import grid, leaf, same, walk

DEVICES = ["numpy", "torch:cpu"]


def _rows_of_transposed_view_leaf(m: Any) -> tuple:
    """Rows of a transpose of a leaf that views an ``arange``, written under no_grad: the
    rebuilt node replays them from the ``arange`` (which requires no grad), so it has no next
    function and the leaf gets no gradient."""
    x = leaf(m, 3, 4)
    t = x.t()
    rows = [t[i] for i in range(4)]
    with m.no_grad():
        t.mul_(2)
    nodes = [walk(r.grad_fn, 2) for r in rows]
    sum((r * r).sum() for r in rows).backward()
    return nodes, [r.requires_grad for r in rows], x.grad


def _whole_view_of_view_leaf(m: Any) -> tuple:
    """A view of all of a view-leaf (``x[:]``) written under no_grad: the rebuilt node over
    a root that requires no grad, and autograd.grad to the leaf refusing as torch's."""
    x = leaf(m, 2, 3)
    v = x[:]
    with m.no_grad():
        x.add_(1)
    node = walk(v.grad_fn, 2)
    try:
        m.autograd.grad(v.sum(), x)
    except RuntimeError:
        return node, "RuntimeError"
    return node, None


def _rows_of_plain_leaf(m: Any) -> tuple:
    """The same writes on a leaf that views nothing: the rebuilt node reaches the leaf."""
    x = grid(m, 3, 4).clone().requires_grad_()
    rows = [x[i] for i in range(3)]
    with m.no_grad():
        x.mul_(2)
    nodes = [walk(r.grad_fn, 2) for r in rows]
    sum((r * r).sum() for r in rows).backward()
    return nodes, x.grad


@pytest.mark.parametrize("spec", DEVICES)
@pytest.mark.parametrize(
    "program", [_rows_of_transposed_view_leaf, _whole_view_of_view_leaf, _rows_of_plain_leaf]
)
def test_rebuilt_view_of_a_view_leaf(spec: str, program: Any) -> None:
    same(program, spec)


def _versions_over_one_array(m: Any) -> list:
    """Two ``from_numpy`` tensors of one array, a view and a ``detach()`` of the first, a
    view of the second: each ``from_numpy`` has its own counter, which its views and its
    ``detach()`` share."""
    a = np.zeros(3)
    x = m.from_numpy(a)
    y = m.from_numpy(a)
    v, d, yv = x[1:], x.detach(), y[0]
    seen = []
    for write in (lambda: x.add_(1), lambda: v.mul_(2), lambda: yv.add_(5), lambda: d.sub_(1)):
        write()
        seen.append([t._version for t in (x, y, v, d, yv)] + a.tolist())
    return seen


def _from_numpy_of_numpy_of_tensor(m: Any) -> tuple:
    """``from_numpy(t.numpy())``: a counter apart from ``t``'s, over the same memory."""
    t = m.zeros(3, dtype=m.float64)
    z = m.from_numpy(t.numpy())
    z.add_(1)
    first = (t._version, z._version)
    t.add_(1)
    return first, (t._version, z._version), t, z


def _writes_through_data_and_its_detach(m: Any) -> list:
    """``.data`` of a ``from_numpy`` tensor, its ``detach()`` and their views: the ``.data``
    counter is shared by its alias and views, apart from the tensor's."""
    a = np.zeros(3)
    x = m.from_numpy(a)
    xd = x.data
    dd = xd.detach()
    v, dv = xd[1:], dd[1:]
    seen = []
    for write in (lambda: xd.add_(1), lambda: dd.add_(1), lambda: dv.add_(1), lambda: x.add_(1)):
        write()
        seen.append([t._version for t in (x, xd, dd, v, dv)] + a.tolist())
    return seen


@pytest.mark.parametrize("spec", DEVICES)
def test_data_of_from_numpy_and_its_detach_share_one_counter(spec: str) -> None:
    same(_writes_through_data_and_its_detach, spec)


def _from_numpy_after_writes(m: Any) -> list:
    """A ``from_numpy`` of an array written through another one before: its counter starts
    at 0 (the earlier writes are none of its count), as its view's."""
    a = np.zeros(4)
    x = m.from_numpy(a)
    x.add_(1)
    x[1:].mul_(2)
    z = m.from_numpy(a[1:])
    zv = z[::2]
    seen = [(x._version, z._version, zv._version)]
    zv.add_(1)
    x.detach().sub_(1)
    seen.append((x._version, z._version, zv._version))
    return seen


def _data_of_a_view_of_from_numpy(m: Any) -> list:
    """A write through ``.data`` of a view of a ``from_numpy`` tensor (leaf requiring grad or
    not): only the ``.data`` tensor's counter moves."""
    seen = []
    for requires_grad in (False, True):
        a = np.arange(1.0, 7.0)
        x = m.from_numpy(a).requires_grad_(requires_grad)
        v = x[1:3]
        d = v.data
        d.mul_(2)
        seen.append((x._version, v._version, d._version, a.tolist()))
    return seen


def _backward_after_a_write_through_another_from_numpy(m: Any) -> list:
    """A node saved ``x`` (a ``from_numpy``); a write into its memory through another
    ``from_numpy`` of the array (or a view of it) refuses no backward (x's counter did not
    move: backward reads the new values), one through ``x.detach()`` does."""
    seen = []
    for write in ("other", "other's view", "detach"):
        a = np.arange(1.0, 7.0)
        x = m.from_numpy(a)
        y = m.from_numpy(a[1:])
        w = m.ones(6, dtype=m.float64, requires_grad=True)
        loss = (w * x * x).sum()
        with m.no_grad():
            {"other": y, "other's view": y[1:3], "detach": x.detach()}[write].add_(3)
        try:
            loss.backward()
            seen.append(w.grad)
        except RuntimeError:
            seen.append("RuntimeError")
    return seen


@pytest.mark.parametrize("spec", DEVICES)
@pytest.mark.parametrize(
    "program",
    [
        _versions_over_one_array,
        _from_numpy_of_numpy_of_tensor,
        _from_numpy_after_writes,
        _data_of_a_view_of_from_numpy,
        _backward_after_a_write_through_another_from_numpy,
    ],
)
def test_each_from_numpy_has_its_own_version_counter(spec: str, program: Any) -> None:
    same(program, spec)


def _buffer_flags(m: Any) -> tuple:
    """``nn.Buffer(t)`` is a plain tensor with ``persistent``; registered, it keeps it, and
    a deepcopy of the module keeps both flags; a plain tensor has no ``persistent``."""

    class Masked(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mask = m.nn.Buffer(m.ones(2))
            self.grid = m.nn.Buffer(m.zeros(2), persistent=False)
            self.register_buffer("plain", m.ones(1))

    def persistent(t: Any) -> Any:
        try:
            return t.persistent
        except AttributeError:
            return "AttributeError"

    module = Masked()
    made = m.nn.Buffer(m.ones(1), persistent=False)
    copied = copy.deepcopy(module)
    flagged = m.ones(1)
    flagged.persistent = False
    return (
        (type(made) is m.Tensor, isinstance(made, m.nn.Buffer), made.persistent),
        [persistent(t) for t in (module.mask, module.grid, module.plain, m.ones(1))],
        [isinstance(t, m.nn.Buffer) for t in (copied.mask, copied.grid, copied.plain)],
        [persistent(t) for t in (copied.mask, copied.grid, copied.plain)],
        list(copied.state_dict()),
        (persistent(flagged), isinstance(flagged, m.nn.Buffer)),
    )


@pytest.mark.parametrize("spec", DEVICES)
def test_buffer_is_a_plain_tensor_with_its_flags(spec: str) -> None:
    same(_buffer_flags, spec)


def _materialized_lazy_buffer(m: Any) -> tuple:
    """A LazyBatchNorm's running statistics after the first forward: plain tensors that are
    still Buffers, with ``persistent``, also in a deepcopy."""
    norm = m.nn.LazyBatchNorm1d()
    norm(m.ones(4, 3))
    copied = copy.deepcopy(norm)
    return [
        (type(t) is m.Tensor, isinstance(t, m.nn.Buffer), t.persistent)
        for t in (norm.running_mean, copied.running_mean)
    ]


@pytest.mark.parametrize("spec", DEVICES)
def test_materialized_lazy_buffer_is_still_a_buffer(spec: str) -> None:
    same(_materialized_lazy_buffer, spec)


def _reassigned_buffer(m: Any) -> tuple:
    """A Buffer given to a second module keeps the flag it was made with (the registered
    tensor is the Buffer itself, as torch's)."""
    made = m.nn.Buffer(m.ones(2), persistent=False)
    first, second = m.nn.Module(), m.nn.Module()
    first.b = made
    second.b = first.b
    return first.b is made, second.b is made, list(second.state_dict())


@pytest.mark.parametrize("spec", DEVICES)
def test_reassigned_buffer_keeps_its_persistent(spec: str) -> None:
    same(_reassigned_buffer, spec)
