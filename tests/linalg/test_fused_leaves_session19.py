"""The torch backend records a whole linalg function on one detached leaf per input array,
reused by later calls on that array (``tensorweaver_torch.linalg._LEAVES``): gradients stay
torch's where one array is both inputs, where graphs recorded on one leaf overlap, and after
an in-place change; the leaf goes with its array."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest
import tensorweaver as tw
import torch
from linalg_reference import spd

S = spd((2, 4, 4))


@pytest.fixture(autouse=True)
def _on_torch() -> Iterator[None]:
    with tw.device("torch:cpu"):
        yield


def _pair(array: np.ndarray) -> tuple:
    return tw.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


@pytest.mark.parametrize("through_engine", [False, True])
def test_one_array_as_both_inputs_gets_both_gradients(
    through_engine: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if through_engine:  # the backward torch's engine runs where the graph is not one node
        from tensorweaver_torch import linalg as plugin

        monkeypatch.setattr(plugin, "_call_node", lambda *args: None)
    a, ta = _pair(S)
    for _ in range(2):  # the second call finds the first one's leaf
        tw.linalg.solve_triangular(a, a, upper=True).sum().backward()
        torch.linalg.solve_triangular(ta, ta, upper=True).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_two_graphs_on_one_leaf_keep_their_own_gradients() -> None:
    a, ta = _pair(S)
    weights = np.random.default_rng(3).standard_normal((2, 4))
    first, second = tw.linalg.eigvalsh(a), tw.linalg.det(a)
    (second.sum() + (first * tw.tensor(weights)).sum()).backward()
    expected = (
        torch.linalg.det(ta).sum() + (torch.linalg.eigvalsh(ta) * torch.tensor(weights)).sum()
    )
    expected.backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_a_changed_array_is_differentiated_at_its_new_values() -> None:
    a = tw.tensor(S, requires_grad=True)
    tw.linalg.inv(a).sum().backward()
    with tw.no_grad():
        a.mul_(2.0)
    a.grad = None
    tw.linalg.inv(a).sum().backward()
    _, tb = _pair(2 * S)
    torch.linalg.inv(tb).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_the_leaf_goes_with_its_array() -> None:
    from tensorweaver_torch import linalg as plugin

    # What earlier tests left for the collector stays frozen, so no collection during the test
    # changes the count but through its own leaf (a whole collection of a worker's heap late in
    # the suite costs seconds).
    gc.freeze()
    try:
        before = len(plugin._LEAVES)
        a = tw.tensor(S, requires_grad=True)
        tw.linalg.det(a).sum().backward()
        assert len(plugin._LEAVES) == before + 1
        del a  # (no cycle holds it: refcounting frees it)
        assert len(plugin._LEAVES) == before
    finally:
        gc.unfreeze()
