"""The memory link of ``nn.Parameter(t)`` and ``t.detach()`` (the new tensor shares ``t``'s
memory, as PyTorch's) is dropped once nothing else can reach ``t``, so that an update no
longer climbs into it; while anything holds ``t`` (a name, a view, an alias, a graph), the
link stays and changes go both ways as in PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _step(p: tw.Tensor) -> None:
    with tw.no_grad():
        p.add_(1.0)


@pytest.mark.cunumeric
def test_a_parameter_of_a_temporary_drops_its_link(backend: str) -> None:
    p = tw.nn.Parameter(tw.zeros(3, dtype=tw.float64))
    assert p._alias_of is not None  # linked until the first change
    _step(p)
    assert p._alias_of is None  # nobody could see the temporary: the link is gone
    _step(p)
    np.testing.assert_array_equal(np.asarray(p.detach()), [2.0, 2.0, 2.0])


def test_a_held_base_keeps_its_link_both_ways(backend: str) -> None:
    w, tw_w = tw.zeros(3, dtype=tw.float64), torch.zeros(3, dtype=torch.float64)
    p, tp = tw.nn.Parameter(w), torch.nn.Parameter(tw_w)
    _step(p)
    with torch.no_grad():
        tp.add_(1.0)
    assert p._alias_of is w
    with tw.no_grad():
        w.mul_(3.0)
    tw_w.mul_(3.0)
    np.testing.assert_array_equal(np.asarray(p.detach()), tp.detach().numpy())
    np.testing.assert_array_equal(np.asarray(w), tw_w.numpy())


def test_a_view_of_the_base_keeps_the_link(backend: str) -> None:
    # The view holds the base; the parameter's updates must still reach the view.
    w = tw.zeros(2, 3, dtype=tw.float64)
    row = w[1]
    p = tw.nn.Parameter(w)
    del w
    _step(p)
    assert p._alias_of is not None
    np.testing.assert_array_equal(np.asarray(row), [1.0, 1.0, 1.0])


def test_a_detached_alias_of_a_dropped_tensor(backend: str) -> None:
    x = tw.ones(4, dtype=tw.float64)
    y = x.detach()
    keep = y.detach()  # an alias of y: follows y's changes
    del x
    with tw.no_grad():
        y.mul_(5.0)
    assert y._alias_of is None
    np.testing.assert_array_equal(np.asarray(keep), [5.0] * 4)


def test_a_graph_input_keeps_the_link(backend: str) -> None:
    # The graph holds the base: its version check still sees the change through the alias.
    x = tw.ones(3, dtype=tw.float64, requires_grad=True)
    base = x * 2.0
    loss = (base * base).sum()
    alias = base.detach()
    del base
    with tw.no_grad():
        alias.add_(1.0)
    assert alias._alias_of is not None
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        loss.backward()


def test_numpy_shared_memory_follows_the_parameter() -> None:
    host = np.zeros(3)
    p = tw.nn.Parameter(tw.from_numpy(host))
    _step(p)
    _step(p)
    np.testing.assert_array_equal(host, [2.0, 2.0, 2.0])


def test_grads_share_no_memory_with_each_other_or_the_given_gradient(backend: str) -> None:
    # add passes its gradient on to both inputs; each .grad is a tensor of its own, as in
    # PyTorch (an alias of the one gradient made a.grad.mul_ change b.grad and `gradient`)
    got, want = [], []
    for lib in (tw, torch):
        a = lib.ones(3, dtype=lib.float64, requires_grad=True)
        b = lib.ones(3, dtype=lib.float64, requires_grad=True)
        given = lib.full((3,), 2.0, dtype=lib.float64)
        (a + b).backward(given)
        with lib.no_grad():
            a.grad.mul_(5.0)
        (got if lib is tw else want).append(
            [np.asarray(t.detach()) for t in (a.grad, b.grad, given)]
        )
    for mine, theirs in zip(got[0], want[0]):
        np.testing.assert_array_equal(mine, theirs)


def _grads_after(lib, run, change) -> list:
    """(a.grad, b.grad, given) after ``run(a, b, given)`` then ``change(a, b, given)``."""
    a = lib.ones(3, dtype=lib.float64, requires_grad=True)
    b = lib.ones(3, dtype=lib.float64, requires_grad=True)
    given = lib.full((3,), 2.0, dtype=lib.float64)
    run(a, b, given)
    with lib.no_grad():
        change(a, b, given)
    return [np.asarray(t.detach()) for t in (a.grad, b.grad, given)]


def _like_torch(run, change) -> None:
    for mine, theirs in zip(_grads_after(tw, run, change), _grads_after(torch, run, change)):
        np.testing.assert_array_equal(mine, theirs)


@pytest.mark.cunumeric
def test_grads_of_backward_inputs_share_no_memory(backend: str) -> None:
    # backward(inputs=) gave both leaves a detach() alias of the one gradient
    _like_torch(lambda a, b, g: (a + b).backward(g, inputs=[a, b]), lambda a, b, g: a.grad.mul_(5))


def test_grads_made_with_create_graph_are_objects_of_their_own(backend: str) -> None:
    # create_graph gave both leaves the caller's gradient object itself
    _like_torch(
        lambda a, b, g: (a + b).backward(g, create_graph=True), lambda a, b, g: a.grad.mul_(5)
    )
    x = tw.tensor([2.0], dtype=tw.float64, requires_grad=True)
    (x**3).sum().backward(create_graph=True)
    assert type(x.grad.grad_fn).__name__ == "CopyBackwards"  # torch's name for the copy
    (gx,) = tw.autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(np.asarray(gx.detach()), [12.0])  # d(3x^2)/dx at 2


def test_a_gradient_shared_with_numpy_is_copied_into_grad(backend: str) -> None:
    # .grad held the caller's NumPy-shared array: NumPy's later writes changed it
    host = np.full(3, 2.0)
    a = tw.ones(3, dtype=tw.float64, requires_grad=True)
    b = tw.ones(3, dtype=tw.float64, requires_grad=True)
    (a + b).backward(tw.from_numpy(host))
    host += 100.0
    np.testing.assert_array_equal(np.asarray(a.grad), [2.0] * 3)
    np.testing.assert_array_equal(np.asarray(b.grad), [2.0] * 3)


@pytest.mark.cunumeric
def test_a_retained_grad_is_a_copy_and_sums_over_backward_calls(backend: str) -> None:
    # y.grad was a detach() alias of the caller's gradient (y.grad.mul_ changed it), and a
    # second backward replaced y.grad where PyTorch adds to it
    got = []
    for lib in (tw, torch):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        y = x * 2.0
        y.retain_grad()
        given = lib.full((3,), 2.0, dtype=lib.float64)
        y.backward(given, retain_graph=True)
        with lib.no_grad():
            y.grad.mul_(5.0)
        y.backward(given)
        got.append([np.asarray(t.detach()) for t in (y.grad, x.grad, given)])
    for mine, theirs in zip(*got):
        np.testing.assert_array_equal(mine, theirs)


@pytest.mark.cunumeric
def test_a_tracer_reading_frame_locals_does_not_make_a_held_base_unseen(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Calibrated under a tracer that reads frame.f_locals (a debugger at import), the count
    # of one holder was one too many: a base the user still names lost its link at the first
    # write, and p.data.add_ no longer changed it.
    import sys

    core = sys.modules["tensorweaver.tensor"]

    def tracer(frame, event, arg):  # noqa: ANN001, ANN202
        frame.f_locals  # noqa: B018
        return tracer

    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        traced = core._one_holder()
    finally:
        sys.settrace(before)
    monkeypatch.setattr(core, "_ONE_HOLDER", traced)
    t, tt = tw.zeros(3, dtype=tw.float64), torch.zeros(3, dtype=torch.float64)
    p, tp = tw.nn.Parameter(t), torch.nn.Parameter(tt)
    p.data.add_(1.0)
    tp.data.add_(1.0)
    np.testing.assert_array_equal(np.asarray(t), tt.numpy())


def test_numpy_of_a_base_moves_its_parameter_to_the_shared_memory(backend: str) -> None:
    # The first numpy() of t moved t (and what t was detached from) to the shared memory,
    # not nn.Parameter(t): NumPy's writes did not reach the parameter, as they do in PyTorch.
    got = []
    for lib in (tw, torch):
        t = lib.zeros(2, dtype=lib.float64)
        p = lib.nn.Parameter(t)
        alias = p.detach()
        host = t.numpy()
        host += 10.0
        with lib.no_grad():
            p.mul_(3.0)
        got.append([host.copy()] + [np.asarray(x.detach()) for x in (t, p, alias)])
    for mine, theirs in zip(*got):
        np.testing.assert_array_equal(mine, theirs)
