"""Writes into a base with many live views on torch:cpu too (session 31): the backend's
optional ``memory_users`` (API 2.12) lets the core prove that only its own tensors use the
memory, so the change goes into it and the views are not read again. Where anything else
shares that memory (memory NumPy or torch lent, a ``.data`` or ``detach()`` alias, a graph
that saved the base or a view, a view or export the backend made outside the core), the
write must neither skip a version that torch moves nor change values that torch would not:
each program runs on torch 2.13 and on tensorweaver with only the module changed
(:mod:`snippet_outcomes`); what has no torch counterpart (the native array held by other
code) is checked against the values the write must leave alone.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from snippet_outcomes import grid, leaf, refused_in_place, same_each

Program = Callable[[Any], Any]

DEVICES = ["numpy", "torch:cpu"]


def _views_of(x: Any) -> list:
    """Many live views of the 2-d ``x``: each row, a transpose, a flat reshape, a column and
    a view of a view."""
    return [*(x[i] for i in range(x.shape[0])), x.t(), x.view(-1), x[:, 1], x[2:][1]]


def _base(m: Any, requires_grad: bool = False) -> Any:
    """A 24 x 3 tensor of its own (no view)."""
    return grid(m, 24, 3).clone().requires_grad_(requires_grad)


def _seen(views: list) -> tuple:
    return tuple(views), tuple(v._version for v in views)


def _base_saved_by_a_graph(m: Any) -> tuple:
    # the graph saved the base (mul saves x for w's gradient): backward refuses
    x = _base(m)
    views = _views_of(x)
    loss = (x * leaf(m, 24, 3)).sum()
    with m.no_grad():
        x.add_(1.0)
    return refused_in_place(loss.backward), _seen(views), x._version


def _base_saved_by_a_linear(m: Any) -> tuple:
    # (torch:cpu records linear on torch's own graph, which holds the base's memory)
    x = _base(m)
    views = _views_of(x)
    weight = leaf(m, 2, 3)
    loss = m.nn.functional.linear(x, weight).sum()
    with m.no_grad():
        x.mul_(2.0)
    return refused_in_place(loss.backward), _seen(views), x._version


def _view_saved_by_a_graph(m: Any) -> tuple:
    x = _base(m)
    views = _views_of(x)
    loss = (views[3] * leaf(m, 3)).sum()
    with m.no_grad():
        x.sub_(1.0)
    return refused_in_place(loss.backward), _seen(views), x._version


def _saved_after_the_write(m: Any) -> tuple:
    # a graph made after the write reads the new values
    x = _base(m)
    views = _views_of(x)
    with m.no_grad():
        x.add_(1.0)
    w = leaf(m, 3)
    loss = (views[5] * w).sum() + (views[-2] * views[-2]).sum()
    loss.backward()
    return _seen(views), w.grad


def _data_alias(m: Any) -> tuple:
    # .data shares the memory, with a counter of its own; its views too
    x = _base(m, True)
    d = x.data
    views = _views_of(x)
    data_views = _views_of(d)
    loss = (views[1] * views[1]).sum()
    with m.no_grad():
        x.add_(1.0)
    d.mul_(2.0)
    data_views[7].fill_(-1.0)
    after = refused_in_place(loss.backward)
    return after, _seen(views), _seen(data_views), d, (x._version, d._version), x.grad


def _detached_alias_with_views(m: Any) -> tuple:
    x = _base(m)
    d = x.detach()
    views = _views_of(x)
    detached_views = _views_of(d)
    with m.no_grad():
        x.add_(1.0)
    d.mul_(3.0)
    detached_views[2].zero_()
    return _seen(views), _seen(detached_views), d, x, (x._version, d._version)


def _numpy_memory(m: Any) -> tuple:
    # from_numpy: NumPy's array and its own view see every write, as torch's
    a = np.arange(72.0).reshape(24, 3)
    rows = a[2:5]
    x = m.from_numpy(a)
    views = _views_of(x)
    with m.no_grad():
        x.add_(1.0)
    views[3].mul_(-1.0)
    x.mul_(2.0)
    return _seen(views), x._version, a.tolist(), rows.tolist()


def _torch_memory(m: Any) -> tuple:
    # from_dlpack of a torch tensor: the producer sees every write, as torch's
    source = torch.arange(72.0, dtype=torch.float64).reshape(24, 3)
    x = m.from_dlpack(source)
    views = _views_of(x)
    with m.no_grad():
        x.add_(1.0)
    views[0].fill_(5.0)
    x.mul_(0.5)
    return _seen(views), x._version, source.tolist()


def _numpy_share_of_the_base(m: Any) -> tuple:
    # numpy() of the base while its views live: NumPy sees the writes
    x = _base(m)
    views = _views_of(x)
    host = x.numpy()
    with m.no_grad():
        x.add_(1.0)
    views[1].mul_(2.0)
    return _seen(views), host.tolist(), x._version


PROGRAMS: dict[str, Program] = {
    "base saved by a graph": _base_saved_by_a_graph,
    "base saved by linear": _base_saved_by_a_linear,
    "view saved by a graph": _view_saved_by_a_graph,
    "graph made after the write": _saved_after_the_write,
    ".data alias and its views": _data_alias,
    "detach() alias and its views": _detached_alias_with_views,
    "NumPy's memory": _numpy_memory,
    "torch's memory (DLPack)": _torch_memory,
    "numpy() of the base": _numpy_share_of_the_base,
}


@pytest.mark.parametrize("spec", DEVICES)
def test_shared_memory_with_many_views_as_torch(spec: str) -> None:
    same_each(PROGRAMS, spec)


def _spy_view_ops(monkeypatch: Any) -> list:
    from tensorweaver.ops import index

    calls: list = []
    real = index.getitem
    monkeypatch.setattr(index, "getitem", lambda *a: calls.append(1) or real(*a))
    return calls


@pytest.mark.parametrize("spec", DEVICES)
def test_plain_base_written_into_memory(spec: str, monkeypatch: Any) -> None:
    """A plain base with many live views is written into its memory on both CPU backends:
    no view op is replayed, the views hold the new values and each version moved once."""
    calls = _spy_view_ops(monkeypatch)
    with tw.device(spec):
        for requires_grad in (False, True):
            x = tw.zeros(16, 3, dtype=tw.float64, requires_grad=requires_grad)
            rows = [x[i] for i in range(16)]
            calls.clear()
            with tw.no_grad():
                x.add_(1.0)
            assert calls == []
            assert [r.tolist() for r in rows] == [[1.0] * 3] * 16
            assert [r._version for r in rows] == [1] * 16


def _held(make: Callable[[Any], Any]) -> Callable[[Any], Callable[[], list]]:
    """Hold ``make(native)`` (an array over the base's memory); read its values later, flat."""

    def hold(native: Any) -> Callable[[], list]:
        array = make(native)
        return lambda: np.asarray(array).ravel().tolist()

    return hold


def _saved_by_torch(native: Any) -> Callable[[], list]:
    """A torch graph that saved the native: its gradient for the other factor reads it."""
    other = torch.ones(3, dtype=torch.float64, requires_grad=True)
    out = (native * other).sum()

    def read() -> list:
        out.backward()
        return other.grad.tolist()

    return read


#: Ways other code holds the base's memory, which the core cannot see, each with the devices
#: it applies to: each holds an array over that memory and gives a reader of its values.
HELD_ELSEWHERE: dict[str, tuple[Callable[[Any], Callable[[], list]], tuple[str, ...]]] = {
    "the array itself": (_held(lambda native: native), ("numpy", "torch:cpu")),
    "a view the library made": (_held(lambda native: native[0]), ("numpy", "torch:cpu")),
    "a detached tensor": (_held(lambda native: native.detach()), ("torch:cpu",)),
    "a DLPack import": (_held(lambda native: torch.from_dlpack(native)), ("torch:cpu",)),
    "a graph's saved input": (_saved_by_torch, ("torch:cpu",)),
}


@pytest.mark.parametrize(
    ("spec", "what"),
    [(spec, what) for what, (_, specs) in HELD_ELSEWHERE.items() for spec in specs],
)
def test_memory_held_outside_the_core_is_never_written(spec: str, what: str) -> None:
    """An array over the base's memory that code outside the core holds keeps its values
    (the core rebinds the base, as it does without views), while the tensor's views see the
    write and each version moves once."""
    hold = HELD_ELSEWHERE[what][0]
    with tw.device(spec):
        x = tw.zeros(16, 3, dtype=tw.float64)
        rows = [x[i] for i in range(16)]
        read = hold(x.native)
        with tw.no_grad():
            x.add_(1.0)
    assert set(read()) == {0.0}
    assert [r.tolist() for r in rows] == [[1.0] * 3] * 16
    assert [r._version for r in rows] == [1] * 16 and x._version == 1


@pytest.mark.parametrize("spec", DEVICES)
def test_memory_users_counts_the_views_references(spec: str) -> None:
    """The plugins' ``memory_users``: the references to the base that its views hold
    (NumPy: one each; torch: one for all), and None where another array, graph or export
    uses the memory, a view is left out, or the memory was lent by another library."""
    import sys

    backend = tw.zeros(1, device=spec).backend

    class Holder:
        pass

    base = Holder()
    base.value = backend.from_host(np.zeros((4, 3)), tw.float64)
    alone = sys.getrefcount(base.value)
    assert backend.memory_users(base.value, []) == 0
    views = [backend.slice(base.value, (i, 0), (i + 1, 3), (1, 1)) for i in range(4)]
    views.append(backend.permute(views[0], (1, 0)))
    held = sys.getrefcount(base.value) - alone
    assert backend.memory_users(base.value, views) == held
    left_out = backend.memory_users(base.value, views[1:])
    assert left_out is None or left_out != held
    assert backend.memory_users(views[0], []) is None
    others: list[Callable[[], Any]] = []
    if spec == "torch:cpu":
        others += [
            lambda: base.value.detach(),
            lambda: torch.utils.dlpack.to_dlpack(base.value),
            lambda: torch.utils.dlpack.to_dlpack(views[2]),
            lambda: base.value * torch.ones(3, dtype=torch.float64, requires_grad=True),
            lambda: views[1] * torch.ones(3, dtype=torch.float64, requires_grad=True),
        ]
    for make in others:
        kept = make()
        assert backend.memory_users(base.value, views) is None
        del kept
        assert backend.memory_users(base.value, views) == held
    lent = backend.wrap_host(np.zeros((4, 3)))
    assert backend.memory_users(lent, []) is None
