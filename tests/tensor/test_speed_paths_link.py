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
