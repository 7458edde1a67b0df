"""Views of one tensor a compiled step does not return, returned or kept in module attributes,
share its memory in replays as eagerly, and a returned ``expand()`` refuses in-place writes
(reader I, session 27: D2, D2b, D2c). Each program runs four or five calls: two or three
traces, then replays; torch runs it eagerly, which ``torch.compile`` must equal."""

from __future__ import annotations

import warnings

import pytest
import tensorweaver as tw
from snippet_outcomes import same, same_each
from tensorweaver.compiler import CompileWarning

BACKENDS = ("numpy", "torch:cpu")


def _two_views_of_one_result(m):
    def step(x):
        a = x * 2
        return a[:, 0], a[1]  # both views of a, which the step does not return

    f = tw.compile(step) if m is tw else step
    got = []
    for _ in range(4):  # two traces, then replays
        col, row = f(m.ones(2, 2, dtype=m.float64))
        col.add_(100)  # writes a[1, 0], which row shows
        got.append((col, row, row._version))
    return got


def _view_and_detach_of_one_result(m):
    def step(x):
        a = x + 1
        return a.detach(), a.t()  # an alias and a view of a, which is not returned

    f = tw.compile(step) if m is tw else step
    got = []
    for i in range(4):
        kept, flipped = f(m.full((2, 3), float(i), dtype=m.float64))
        kept[0, 2] = -1.0
        got.append(flipped)
    return got


def _written_in_place(m, step, n, calls, write):
    """``step`` on ``full((n,), i)`` for call ``i`` (compiled under tw; two traces, then
    replays), each result then written by ``write``: the result, or whether the write was
    refused as one to a single memory location."""
    f = tw.compile(step) if m is tw else step
    got = []
    for i in range(calls):
        out = f(m.full((n,), float(i), dtype=m.float64))
        try:
            write(out)
            got.append(out)
        except RuntimeError as e:
            got.append("memory location" in str(e))
    return got


def _expanded_result_written(m):
    return _written_in_place(m, lambda x: (x + 1).expand(3, 2), 2, 5, lambda out: out.add_(1))


def _column_of_an_expand_written(m):
    def step(x):
        return (x * 3).expand(2, 3)[:, 1]  # a zero stride: both elements are x[1]

    return _written_in_place(m, step, 3, 4, lambda out: out.mul_(2))


def _two_views_kept_by_a_module(m):
    class Keeper(m.nn.Module):
        def forward(self, x):
            a = x * 2
            self.c1, self.c2 = a[:, 0], a[1]  # both views of a
            return a.sum()

    keeper = Keeper()
    f = tw.compile(keeper) if m is tw else keeper
    got = []
    for i in range(5):  # traces, then replays
        f(m.full((2, 2), float(i), dtype=m.float64))
        keeper.c1.add_(100)  # writes a[1, 0], which c2 shows
        got.append(keeper.c2.clone())
    return got


def _one_view_kept_one_returned(m):
    class Keeper(m.nn.Module):
        def forward(self, x):
            a = x * 2
            self.c1 = a[:, 0]
            return a[1]  # a view of a, as c1 is

    keeper = Keeper()
    f = tw.compile(keeper) if m is tw else keeper
    got = []
    for i in range(5):
        row = f(m.full((2, 2), float(i), dtype=m.float64))
        row.sub_(7)  # writes a[1, 0], which c1 shows
        got.append(keeper.c1.clone())
    return got


@pytest.mark.parametrize("spec", BACKENDS)
def test_two_returned_views_of_one_intermediate_share_memory(spec):
    same_each(
        {
            "two views": _two_views_of_one_result,
            "a detach() and a view": _view_and_detach_of_one_result,
        },
        spec,
    )


@pytest.mark.parametrize("spec", BACKENDS)
def test_returned_expand_refuses_in_place_writes(spec):
    same_each(
        {"expand": _expanded_result_written, "a column of an expand": _column_of_an_expand_written},
        spec,
    )


@pytest.mark.parametrize("spec", BACKENDS)
def test_views_of_one_intermediate_kept_by_a_module_share_memory(spec):
    same_each(
        {"both kept": _two_views_kept_by_a_module, "one returned": _one_view_kept_one_returned},
        spec,
    )


def _one_view_of_a_result(m):
    def step(x):
        a = x * 2
        return a[1]  # a single view of a: nothing else shares a's memory

    f = tw.compile(step) if m is tw else step
    got = []
    for i in range(4):
        row = f(m.full((2, 2), float(i), dtype=m.float64))
        row.add_(1)
        got.append(row)
    return got


def test_a_single_view_of_an_intermediate_is_still_replayed():
    same(_one_view_of_a_result, "numpy")
    step = tw.compile(lambda x: (x * 2)[1])
    for _ in range(4):
        step(tw.ones(2, 2, dtype=tw.float64))
    assert step.traces == 2  # replayed from the third call, not run eagerly


# Pieces of one result that lie apart in memory (reader K, session 28: K10): no write through
# one reaches another, so each rebuilt as a tensor of its own behaves as eagerly: replayed.
_PIECES = {
    "chunk": lambda a: a.chunk(3, -1),  # q, k, v of one projection: interleaved columns
    "split": lambda a: a.split([1, 2], -1),
    "unbind": lambda a: a.unbind(0),
    "every other row": lambda a: (a[::2], a[1::2]),
}


def _pieces_of_one_result(m, cut):
    w = m.linspace(-1.0, 1.0, 12, dtype=m.float64).reshape(4, 3)

    def project(x):
        return cut(x @ w)  # views of a result it does not return

    f = tw.compile(project) if m is tw else project
    got = []
    with m.no_grad():
        for i in range(5):  # two traces, then replays
            pieces = f(m.full((4, 4), float(i), dtype=m.float64) + m.eye(4, dtype=m.float64))
            pieces[0].add_(100)  # seen by no other piece
            got.append(pieces)
    return got


def _pieces_kept_by_a_module(m):
    class KeyValue(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = m.nn.Linear(3, 4, dtype=m.float64)

        def forward(self, x):
            self.k, self.v = self.proj(x).chunk(2, -1)
            return self.k.sum()

    kv = KeyValue()
    with m.no_grad():
        kv.proj.weight.copy_(m.linspace(-1.0, 1.0, 12, dtype=m.float64).reshape(4, 3))
        kv.proj.bias.copy_(m.linspace(0.5, -0.5, 4, dtype=m.float64))
    f = tw.compile(kv) if m is tw else kv
    got = []
    with m.no_grad():
        for i in range(5):
            total = f(m.full((2, 3), float(i), dtype=m.float64))
            kv.k.mul_(3)  # v does not see it
            got.append((total, kv.k.clone(), kv.v.clone()))
    return got, f


def test_pieces_apart_in_memory_give_torchs_values():
    programs = {
        name: (lambda m, c=cut: _pieces_of_one_result(m, c)) for name, cut in _PIECES.items()
    }
    programs["kept by a module"] = lambda m: _pieces_kept_by_a_module(m)[0]
    same_each(programs, "numpy")  # (torch:cpu too, but its first compiled matmul costs 11 s)


def test_pieces_apart_in_memory_are_replayed():
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)  # replayed, not run eagerly
        for cut in _PIECES.values():
            step = tw.compile(lambda x, c=cut: c(x * 2))
            with tw.no_grad():
                for _ in range(4):
                    step(tw.ones(4, 3, dtype=tw.float64))
            assert step.traces == 2
        _, kept = _pieces_kept_by_a_module(tw)
        assert kept.traces == 3  # (as with one view kept: the first call adds k and v)


def _overlapping_slices_of_one_result(m):
    def step(x):
        a = x * 2
        return a[:, :2], a[:, 1:]  # both hold column 1 of a

    f = tw.compile(step) if m is tw else step
    got = []
    for i in range(4):
        left, right = f(m.full((2, 3), float(i), dtype=m.float64))
        left.add_(100)  # writes a[:, 1], which right shows
        got.append((left, right))
    return got


def test_overlapping_slices_of_one_result_still_run_eagerly():
    same(_overlapping_slices_of_one_result, "numpy")
    with pytest.warns(CompileWarning, match="share memory"):
        _overlapping_slices_of_one_result(tw)


def _piece_saved_then_its_sibling_written(m):
    f = (lambda x: (x * 2).chunk(2)) if m is not tw else tw.compile(lambda x: (x * 2).chunk(2))
    got = []
    for i in range(4):
        w = m.ones(2, dtype=m.float64, requires_grad=True)
        with m.no_grad():
            q, k = f(m.arange(4.0, dtype=m.float64) + i)
        y = (k * w).sum()  # saves k for w's gradient
        q.add_(1)  # PyTorch: one version counter for all views of x * 2
        try:
            y.backward()
            got.append((k._version, w.grad))
        except RuntimeError as e:
            got.append((k._version, "inplace" in str(e).replace("in-place", "inplace")))
    return got


def test_a_write_into_a_piece_bumps_its_siblings_version():
    same(_piece_saved_then_its_sibling_written, "numpy")
