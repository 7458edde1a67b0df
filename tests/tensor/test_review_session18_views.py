"""Session 18's review of session 17's views: view() of computed results PyTorch views, and
repeat() without any repeated axis is a new tensor (it was the input itself)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as tw_functional
import torch
import torch.nn.functional as torch_functional


def _functional(lib):
    return torch_functional if lib is torch else tw_functional


# Each is a computed (not a view) result of a transposed input, then viewed: PyTorch's result
# is contiguous, ours has the backend's layout (before: view() raised where PyTorch views).
COMPUTED_THEN_VIEWED = {
    "cat": lambda lib, a: lib.cat([a, a]).view(-1),
    "slice of cat": lambda lib, a: lib.cat([a, a])[1:3].view(-1),
    "softmax": lambda lib, a: _functional(lib).softmax(a, 0).view(-1),
    "cumsum": lambda lib, a: a.cumsum(0).view(-1),
    "masked_fill": lambda lib, a: a.masked_fill(a > 0, 1.0).view(-1),
    "repeat": lambda lib, a: a.repeat(1, 1).view(-1),
    "pad": lambda lib, a: _functional(lib).pad(a, (1, 1)).view(-1),
    "contiguous": lambda lib, a: a.contiguous().view(3, 2),
}


@pytest.mark.parametrize("case", list(COMPUTED_THEN_VIEWED))
def test_view_of_a_computed_result_as_torch(backend, case) -> None:
    results = []
    for lib in (torch, tw):
        a = lib.tensor([[1.0, -2.0], [3.0, 4.0], [5.0, 6.0]], dtype=lib.float64).t()
        results.append(np.asarray(COMPUTED_THEN_VIEWED[case](lib, a).tolist()))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-15, atol=0)


@pytest.mark.parametrize(("shape", "repeats"), [((3,), (1,)), ((2, 2), (1, 1)), ((3,), (1, 1))])
def test_repeat_of_ones_is_a_new_tensor(backend, shape, repeats) -> None:
    # before: repeat(1) / repeat(1, 1) returned the input itself, so writes into the
    # "repeated" tensor changed the input
    outcomes = []
    for lib in (torch, tw):
        source = lib.arange(float(torch.Size(shape).numel())).reshape(shape)
        repeated = source.repeat(*repeats)
        repeated.fill_(7.0)
        repeated.view(-1)[0] = 9.0
        outcomes.append((source.tolist(), repeated.tolist()))
    assert outcomes[0] == outcomes[1]


def test_repeat_of_ones_gradient_and_node(backend) -> None:
    grads, names = [], []
    for lib in (torch, tw):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        out = x.repeat(1)
        names.append(out.grad_fn.name())
        (out * lib.tensor([3.0, 4.0], dtype=lib.float64)).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] and names[0] == names[1]


def test_view_takes_size_keyword(backend) -> None:
    # before: TypeError "unexpected keyword 'size'" where torch views
    shapes = [tuple(lib.arange(6.0).view(size=(2, 3)).shape) for lib in (torch, tw)]
    assert shapes[0] == shapes[1]
    for lib in (torch, tw):
        with pytest.raises(TypeError):
            lib.arange(6.0).view(2, size=(3,))


def _write_through_view_of_cat(lib):
    p = lib.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], dtype=lib.float64)
    a = lib.cat([p.t(), p.t()])
    a.view(-1)[0] = 100.0
    a[:, :].view(12)[2] = 5.0
    return a


def _write_through_view_of_softmax(lib):
    p = lib.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], dtype=lib.float64)
    s = _functional(lib).softmax(p.t(), 0)
    s.view(-1)[1] = 7.0
    return s


@pytest.mark.parametrize("make", [_write_through_view_of_cat, _write_through_view_of_softmax])
def test_writes_through_view_of_a_computed_result_reach_it(backend, make) -> None:
    # before: view() of a result whose backend layout needed a copy returned a detached copy
    # (writes through it were lost; torch views these contiguous results)
    assert make(tw).tolist() == make(torch).tolist()


def test_view_of_a_view_through_detach_refuses_as_torch(backend) -> None:
    # before: a detach() alias of a transposed view was viewed as a copy (torch raises)
    for lib in (torch, tw):
        p = lib.arange(6.0).reshape(2, 3)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            p.t().detach().view(-1)


def test_view_size_keyword_takes_a_sequence_only(backend) -> None:
    for lib in (torch, tw):
        with pytest.raises(TypeError):
            lib.arange(6.0).view(size=-1)
