"""Semantics the session-22 fast paths must keep (issue 16), against PyTorch 2.13: a basic
``x[index] = v`` written without a graph (values, version counter, views that follow the
base, a write through a view, the history kept under no_grad, the graph-recording path
left to the general code), ``x[i]`` read without a graph, ``x.view(dtype)`` and
``named_modules`` walked without recursion (order, duplicates, an overriding subclass)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

INDICES = [2, -1, (1, 3), (slice(1, 4),), (slice(None), 1), (slice(0, 5, 2), slice(1, 3)), ()]


def _pair(seed: int = 0) -> tuple:
    a = np.random.default_rng(seed).standard_normal((5, 4))
    return tw.tensor(a), torch.tensor(a)


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_a_basic_write_like_torch(backend: str, index: object) -> None:
    x, y = _pair()
    row = x[0] if index != () else x  # a view that must follow the write
    row_t = y[0] if index != () else y
    v = np.random.default_rng(1).standard_normal(np.shape(y[index].numpy()))
    x[index] = tw.tensor(v)
    y[index] = torch.tensor(v)
    x[index] = 0.5 if index != () else x[index]
    y[index] = 0.5 if index != () else y[index]
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    np.testing.assert_array_equal(row.numpy(), row_t.numpy())
    assert x._version == y._version


def test_a_write_through_a_view_reaches_its_base(backend: str) -> None:
    x, y = _pair()
    x.view(-1)[5] = 7.0
    y.view(-1)[5] = 7.0
    x[1][2:] = tw.tensor([1.0, 2.0])
    y[1][2:] = torch.tensor([1.0, 2.0])
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    assert x._version == y._version


def test_a_write_under_no_grad_keeps_the_history(backend: str) -> None:
    x, y = _pair()
    x.requires_grad_()
    y.requires_grad_()
    a, b = x * 2, y * 2
    with tw.no_grad():
        a[1, 1:3] = 4.0
    with torch.no_grad():
        b[1, 1:3] = 4.0
    assert a.requires_grad and a.grad_fn is not None
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_array_equal(x.grad.numpy(), y.grad.numpy())


def test_a_write_with_grad_records_copy_slices(backend: str) -> None:
    x, y = _pair()
    w, u = tw.ones(4, requires_grad=True), torch.ones(4, requires_grad=True)
    x[2] = w * 3
    y[2] = u * 3
    assert type(y.grad_fn).__name__ == type(x.grad_fn).__name__ == "CopySlices"
    assert x.grad_fn.name() == y.grad_fn.name() == "torch::autograd::CopySlices"
    (x * x).sum().backward()
    (y * y).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), u.grad.numpy())


def test_an_inference_tensor_write_is_refused_outside_the_mode(backend: str) -> None:
    with tw.inference_mode():
        x = tw.zeros(3, 2)
    with torch.inference_mode():
        y = torch.zeros(3, 2)
    with pytest.raises(RuntimeError) as theirs:
        y[1] = 1.0
    with pytest.raises(RuntimeError, match="[Ii]nference"):
        x[1] = 1.0
    assert "Inference" in str(theirs.value)


def test_an_int_read_is_a_view_with_or_without_grad(backend: str) -> None:
    x, y = _pair()
    for requires_grad in (False, True):
        x.requires_grad_(requires_grad)
        r = x[3]
        assert r._view_of is not None and r.shape == (4,)
        np.testing.assert_array_equal(r.detach().numpy(), y[3].numpy())
        assert (r.grad_fn is not None) is requires_grad
    with pytest.raises(IndexError, match="out of bounds"):
        x[5]


def test_view_of_a_dtype(backend: str) -> None:
    x, y = _pair()
    np.testing.assert_array_equal(x.view(tw.int64).numpy(), y.view(torch.int64).numpy())


def _tree(nn: object) -> object:
    shared = nn.Linear(2, 2)
    inner = nn.Sequential(shared, nn.ReLU(), nn.Sequential(shared, nn.Tanh()))
    return nn.Sequential(inner, nn.ModuleDict({"a": shared, "b": nn.Identity()}), inner)


@pytest.mark.parametrize("remove_duplicate", [True, False])
def test_named_modules_like_torch(remove_duplicate: bool) -> None:
    ours, theirs = _tree(tw.nn), _tree(torch.nn)
    names = [n for n, _ in ours.named_modules(remove_duplicate=remove_duplicate, prefix="m")]
    expected = [n for n, _ in theirs.named_modules(remove_duplicate=remove_duplicate, prefix="m")]
    assert names == expected
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]


def test_named_modules_calls_an_override_below() -> None:
    class Hidden(tw.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.secret = tw.nn.Linear(2, 2)

        def named_modules(self, memo=None, prefix="", remove_duplicate=True):  # noqa: ANN001, ANN201
            yield prefix, self  # hides its children

    model = tw.nn.Sequential(tw.nn.Linear(2, 2), Hidden(), tw.nn.ReLU())
    assert [n for n, _ in model.named_modules()] == ["", "0", "1", "2"]
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias"]
