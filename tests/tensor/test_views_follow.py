"""Views follow their base: after an in-place change of a tensor (or a write through another
view of it, or through a ``detach()`` alias), every view taken earlier shows the new values,
as PyTorch's shared memory makes it; ``expand`` results are views too, refuse in-place
writes that would land on one element twice, and write a selection that repeats none into
their base. Each case runs on tensorweaver and on torch and compares everything returned.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
import tensorweaver as tw
from tensor_reference import grads_like_torch, like_torch, raises_like_torch, uniform

X = uniform((3, 4), seed=3)


def _slice_then_add(m, x):
    v = x[1:]
    x.add_(1)
    return v


def _sibling_write(m, x):
    t, row = x.t(), x[0]
    t[1, 0] = 7.0
    return x, row


def _views_of_a_written_view(m, x):
    a, b = x.chunk(2, 1)
    a.fill_(1)
    x.mul_(3)
    return x, a, b


def _unbind_narrow_split(m, x):
    rows = x.unbind(0)
    cols = x.narrow(1, 1, 2)
    pieces = x.split([1, 3], 1)
    x[0] *= 10
    x[:, 3] = -1.0
    return (*rows, cols, *pieces)


def _reshape_family(m, x):
    views = (x.view(12), x.reshape(4, 3), x.flatten(), x.unsqueeze(0), x.view(1, 3, 4).squeeze(0))
    x.sub_(0.5)
    return views


def _chain(m, x):
    row = x[2]
    tail = row[1:]
    head = row.unsqueeze(0)[:, :2]
    x.fill_(4)
    tail.mul_(2)  # through two views into x, then into head
    return x, row, tail, head


def _permuted(m, x):
    p = x.unsqueeze(2).permute(2, 1, 0)
    q = x.transpose(0, 1)
    x.clamp_(max=0.2)
    return p, q


def _axis_movers(m, x):
    y = x.unsqueeze(0)
    views = (x.T, x.mT, y.mT, x.adjoint(), y.movedim(0, 2), m.moveaxis(y, 2, 0), x.swapaxes(0, 1))
    x.mul_(-1)
    x.T[1, 2] = 5.0  # and writes through them
    y.movedim(0, 2)[0, 3].fill_(6)
    return (x, *views)


def _flatteners(m, x):
    r, a = x.ravel(), m.atleast_3d(x)
    x.div_(4)
    r[0] = 1.0
    return x, r, a


def _detach_alias(m, x):
    d = x.detach()
    v = x[:, 1]
    d.add_(5)  # through the alias into x, then into v
    x.neg_()  # and x's change into d
    return x, d, v


def _detach_of_a_view(m, x):
    d = x[1:].detach()
    d.fill_(9)
    return x


def _data_replaced(m, x):
    v = x[0]
    x.data = m.zeros(3, 4, dtype=x.dtype)
    x.add_(1)
    return v, x  # v keeps the memory x had


def _expand_follows(m, x):
    b = x[0]
    e = b.expand(2, 4)
    f = b.unsqueeze(0).expand_as(x)
    g = m.broadcast_to(b, (3, 4))
    b.mul_(-2)
    return e, f, g


def _expand_selection_written(m, x):
    b = x[:, :1].clone()
    e = b.expand(3, 4)
    e[1, 2] = 8.0  # one element of b
    e[0].fill_(3)  # a row repeats nothing: b[0]
    return b, e


def _expand_filled(m, x):
    """``fill_``/``zero_`` write one value through every copy: PyTorch allows them."""
    b = x[:2, :1].clone()
    e = b.unsqueeze(1).expand(2, 3, 4)
    e[:, 1].fill_(2.5)
    c = x[0].clone()
    f = c.expand(3, 4)
    f.zero_()
    g = c.expand(2, 4)
    g[:, 1:3].fill_(float("nan"))
    return b, e, c, f, g


def _expand_without_repeats(m, x):
    b = x[0].clone()
    e = b.expand(1, 4)
    e.add_(1)
    return b, e


CASES = {
    "slice": _slice_then_add,
    "sibling": _sibling_write,
    "chunk": _views_of_a_written_view,
    "unbind-narrow-split": _unbind_narrow_split,
    "reshape-family": _reshape_family,
    "chain": _chain,
    "permute-transpose": _permuted,
    "axis-movers": _axis_movers,
    "flatteners": _flatteners,
    "detach-alias": _detach_alias,
    "detach-of-view": _detach_of_a_view,
    "data-replaced": _data_replaced,
    "expand-follows": _expand_follows,
    "expand-selection": _expand_selection_written,
    "expand-filled": _expand_filled,
    "expand-no-repeats": _expand_without_repeats,
}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_views_follow_their_base_like_torch(backend: str, case: str) -> None:
    like_torch(lambda m, x: CASES[case](m, x), X)


@pytest.mark.parametrize("dtype", ["int64", "bool", "float32"])
def test_views_of_other_dtypes_follow_like_torch(backend: str, dtype: str) -> None:
    def fn(m, x):
        v, w = x[1], x.t()
        x[0] = x[2]
        x.logical_not_() if x.dtype == m.bool else x.mul_(2)
        return v, w

    like_torch(fn, np.arange(12).reshape(3, 4) % 3, dtype=dtype)


def test_0d_and_empty_views_follow_like_torch(backend: str) -> None:
    def fn(m, x, e):
        v, ve = x.view(1), e[:, 1]
        x.mul_(3)
        e.add_(1)
        return v, ve, e

    like_torch(fn, np.array(2.5), np.zeros((0, 3)))


@pytest.mark.parametrize(
    "write",
    [
        lambda m, e: e.add_(1),
        lambda m, e: e.mul_(m.ones(3, 4)),
        lambda m, e: e.copy_(m.zeros(3, 4)),
        lambda m, e: e.__setitem__((slice(None), 1), m.arange(3.0, dtype=e.dtype)),
        lambda m, e: e[:, 2].add_(1),
        lambda m, e: e[:, 2].fill_(m.tensor(1.0, dtype=e.dtype)),
        lambda m, e: m.broadcast_tensors(e[:1], m.ones(2, 1, 1))[0].sub_(1),
    ],
    ids=[
        "add_",
        "mul_",
        "copy_",
        "setitem-column",
        "column-add_",
        "column-fill_-tensor",
        "broadcast_tensors",
    ],
)
def test_writes_onto_repeated_elements_raise_like_torch(backend: str, write) -> None:
    raises_like_torch(
        lambda m, x: write(m, x[:1].expand(3, 4)),
        X,
        match=["more than one element of the written-to tensor refers to a single memory"],
    )


def test_gradient_through_a_view_of_a_changed_tensor_like_torch(backend: str) -> None:
    def fn(m, x):
        y = x * 2
        v, t = y[1:], y.t()
        y.mul_(3)  # v and t now hang on the mul_, as in PyTorch
        return v.sum(0) + t[:, 0].sin()

    grads_like_torch(fn, X)


def test_a_saved_view_changed_through_its_base_fails_backward_like_torch(backend: str) -> None:
    def fn(m, x):
        y = x.detach().requires_grad_() * 1
        v = y[:2]
        out = (v * v).sum()
        y.mul_(2)
        out.backward()

    raises_like_torch(fn, X, match=["modified by an in-?place operation"])


def test_a_view_of_a_parameter_follows_the_optimizer_step_like_torch(backend: str) -> None:
    def fn(m, w0):
        w = m.nn.Parameter(w0.clone())
        wt, row = w.t(), w[0]
        opt = m.optim.SGD([w], lr=0.1, momentum=0.9)
        for _ in range(2):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
        return wt.detach(), row.detach(), wt.grad_fn is not None

    like_torch(fn, X)


def test_dead_views_do_not_pile_up_on_their_base(backend: str) -> None:
    # Objects made before are frozen: the collection walks only this test's (a whole
    # collection of a worker's heap late in the suite costs seconds).
    gc.freeze()
    try:
        x = tw.zeros(8)
        for i in range(1000):
            x[i % 8].item()  # a view, dropped at once
        gc.collect()
    finally:
        gc.unfreeze()
    assert len(x._views) < 32
    x.add_(1)  # the refresh forgets them all
    assert x._views is None


@pytest.mark.cunumeric
def test_views_follow_on_cunumeric(backend: str) -> None:
    like_torch(lambda m, x: _unbind_narrow_split(m, x), X)
    like_torch(lambda m, x: _expand_selection_written(m, x), X)


def _held_siblings(m, x):
    rows = x.unbind(0)
    firsts = [x[i] for i in range(3)]
    runs = (x[0:2], x[1:3], x.narrow(1, 1, 2), x[:, 3], x.split(2, 1)[1])
    for i, row in enumerate(rows):
        row.add_(i + 1)  # each write reaches x, the overlapping runs and the other axis
    firsts[1].mul_(-1)
    runs[0].sub_(0.5)  # overlaps runs[1] in row 1
    return (x, *rows, *firsts, *runs)


def test_writes_through_held_siblings_like_torch(backend: str) -> None:
    like_torch(_held_siblings, X)


def test_a_write_through_a_row_rereads_only_views_it_touches(backend: str, monkeypatch) -> None:
    """Rows of one axis are apart: writing through each of n held rows rereads no other row
    (it reread all n: quadratic), but still every view across that axis."""
    x = tw.zeros(40, 3)
    rows, column = x.unbind(0), x[:, 1]
    calls = []
    reread = tw.Tensor._reread
    monkeypatch.setattr(tw.Tensor, "_reread", lambda *a: calls.append(1) or reread(*a))
    for i, row in enumerate(rows):
        row.add_(i)
    assert len(calls) == 40  # the column, once per write
    assert column.tolist() == [float(i) for i in range(40)]
