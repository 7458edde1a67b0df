"""Reader r2 (session 30): defects found in this session's changes (regressions) and older
ones met on the way, each against real torch 2.13 through tests/snippet_outcomes.py."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import same

DEVICES = ["numpy", "torch:cpu"]


def _linear_after_data_write(shape: tuple, which: str) -> Callable:
    def program(m: Any) -> Any:
        n = 1
        for s in shape:
            n *= s
        x = (m.arange(float(n), dtype=m.float64).reshape(shape) / 5).requires_grad_()
        w = (m.arange(12.0, dtype=m.float64).reshape(4, 3) / 7 - 0.5).requires_grad_()
        y = m.nn.functional.linear(x, w, m.ones(4, dtype=m.float64))
        t = x if which == "x" else w
        t.data = t.data * 2 + 1  # (rebinds t's memory: torch's node keeps what it saved)
        return m.autograd.grad((y * y).sum(), (x, w))

    return program


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "shape, which", [((2, 3), "w"), ((3,), "w"), ((2, 2, 3), "w"), ((3,), "x"), ((2, 2, 3), "x")]
)
def test_linear_data_write_into_what_torch_saved_as_a_view(
    shape: tuple, which: str, device: str
) -> None:
    same(_linear_after_data_write(shape, which), device, decimals=9)


def _fused_under_copying_hooks(conv: bool, write: str) -> Callable:
    def program(m: Any) -> Any:
        F = m.nn.functional
        if conv:
            x = (m.arange(12.0, dtype=m.float64).reshape(1, 1, 3, 4) / 5).requires_grad_()
            w = (m.arange(8.0, dtype=m.float64).reshape(2, 1, 2, 2) / 7 - 0.5).requires_grad_()
        else:
            x = (m.arange(6.0, dtype=m.float64).reshape(2, 3) / 5).requires_grad_()
            w = (m.arange(12.0, dtype=m.float64).reshape(4, 3) / 7 - 0.5).requires_grad_()
        with m.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = F.conv2d(x, w) if conv else F.linear(x, w, m.ones(4, dtype=m.float64))
        if write == "x.data =":
            x.data = x.data + 1
        else:
            w.data.mul_(2)
        return m.autograd.grad((y * y).sum(), (x, w))

    return program


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "conv, write", [(False, "x.data ="), (False, "w.data.mul_"), (True, "w.data.mul_")]
)
def test_fused_node_under_copying_saved_tensor_hooks(conv: bool, write: str, device: str) -> None:
    same(_fused_under_copying_hooks(conv, write), device, decimals=9)


def _solve_right_then_view(m: Any) -> Any:
    A = m.arange(9.0, dtype=m.float64).reshape(3, 3) / 10
    A = A @ A.mT + m.eye(3, dtype=m.float64)
    X = m.linalg.solve(A, m.arange(6.0, dtype=m.float64).reshape(2, 3), left=False)
    return X.view(-1), X.stride(), X.is_contiguous()


def test_solve_right_result_is_contiguous_numpy() -> None:
    same(_solve_right_then_view, "numpy", decimals=9)


@pytest.mark.cunumeric
def test_solve_right_result_is_contiguous_cunumeric() -> None:
    """(cuPyNumeric keeps the host solve's X row-major: left=False's X is then a copy)"""
    same(_solve_right_then_view, "cunumeric", decimals=9)


def _gradients_sharing_memory(name: str) -> Callable:
    def program(m: Any) -> Any:
        p = m.nn.Parameter(m.arange(3.0, dtype=m.float64) / 3 + 1)
        q = m.nn.Parameter(m.arange(3.0, dtype=m.float64) / 3 + 10)
        opt = getattr(m.optim, name)([p, q], lr=0.1, foreach=True)
        for _ in range(2):
            p.grad = m.ones(3, dtype=m.float64)
            q.grad = p.data  # q steps along p's memory
            opt.step()
        return p, q

    return program


# (fixed in session 31: optim/ _step_in_foreach_order; was a strict xfail)
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["NAdam", "Adadelta"])
def test_foreach_step_of_a_gradient_sharing_another_parameter_more(name: str, device: str) -> None:
    same(_gradients_sharing_memory(name), device, decimals=9)


def _asgd_gradient_is_its_parameter(m: Any) -> Any:
    p = m.nn.Parameter(m.arange(3.0, dtype=m.float64) / 3 + 1)
    opt = m.optim.ASGD([p], lr=0.1, foreach=True)
    for _ in range(2):
        p.grad = p.data
        opt.step()
    return p, opt.state[p]["ax"]


# (fixed in session 31: optim/ _step_in_foreach_order; was a strict xfail)
@pytest.mark.parametrize("device", DEVICES)
def test_foreach_asgd_gradient_that_is_its_parameter(device: str) -> None:
    same(_asgd_gradient_is_its_parameter, device, decimals=9)


def _adam_listed_twice(m: Any) -> Any:
    import warnings

    p = m.nn.Parameter(m.arange(3.0, dtype=m.float64) + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = m.optim.Adam([p, p], lr=0.1, foreach=True)
    for _ in range(2):
        p.grad = m.ones(3, dtype=m.float64)
        opt.step()
    return p, opt.state[p]["exp_avg"], opt.state[p]["exp_avg_sq"]


# (fixed in session 31: optim/ _step_in_foreach_order; was a strict xfail)
@pytest.mark.parametrize("device", DEVICES)
def test_foreach_adam_parameter_listed_twice(device: str) -> None:
    same(_adam_listed_twice, device, decimals=9)


def _tensor_lr_foreach(m: Any) -> Any:
    p = m.nn.Parameter(m.ones(3, dtype=m.float64))
    q = m.nn.Parameter(m.ones(3, dtype=m.float64))
    groups = [{"params": [p]}, {"params": [q], "lr": m.tensor(0.05)}]
    opt = m.optim.Adam(groups, lr=0.1, foreach=True)  # torch: accepted here
    p.grad = m.ones(3, dtype=m.float64)
    q.grad = m.ones(3, dtype=m.float64)
    try:
        opt.step()
    except RuntimeError:  # torch: here (a ValueError where the default lr is a tensor)
        return "refused at step"
    return p, q


# (fixed in session 31: optim/adam.py _refuse_tensor_options; was a strict xfail)
@pytest.mark.parametrize("device", DEVICES)
def test_tensor_lr_with_foreach_refused_as_torch(device: str) -> None:
    same(_tensor_lr_foreach, device)


def _conv_after_data_write(kind: str, which: str) -> Callable:
    def program(m: Any) -> Any:
        F = m.nn.functional
        if kind == "conv1d":
            x = (m.arange(12.0, dtype=m.float64).reshape(1, 3, 4) / 5).requires_grad_()
            w = (m.arange(12.0, dtype=m.float64).reshape(2, 3, 2) / 7 - 0.5).requires_grad_()
            y = F.conv1d(x, w)
        else:
            x = (m.arange(12.0, dtype=m.float64).reshape(1, 1, 3, 4) / 5).requires_grad_()
            w = (m.arange(8.0, dtype=m.float64).reshape(1, 2, 2, 2) / 7 - 0.5).requires_grad_()
            y = F.conv_transpose2d(x, w)
        t = x if which == "x" else w
        t.data = t.data * 2 + 1
        return m.autograd.grad((y * y).sum(), (x, w))

    return program


@pytest.mark.parametrize(
    "kind, device",
    [("conv1d", "numpy"), ("conv1d", "torch:cpu"), ("conv_transpose2d", "numpy")],
)
@pytest.mark.parametrize("which", ["x", "w"])
def test_conv_data_write_reaches_backward(kind: str, which: str, device: str) -> None:
    same(_conv_after_data_write(kind, which), device, decimals=9)


def _cdist_packed(m: Any) -> Any:
    x1 = (m.arange(9.0, dtype=m.float64).reshape(3, 3) / 4).requires_grad_()
    x2 = (m.arange(12.0, dtype=m.float64).reshape(4, 3) / 5).requires_grad_()
    packed = []

    def pack(t: Any) -> Any:
        packed.append(tuple(t.shape))
        return t

    with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        d = m.cdist(x1, x2, p=3.0)
    d.sum().backward()
    return x1.grad, sorted(packed)


@pytest.mark.parametrize("device", DEVICES)
def test_cdist_result_packed_by_saved_tensor_hooks(device: str) -> None:
    same(_cdist_packed, device, decimals=9)


def _qr_data_written_in_place(m: Any) -> Any:
    a = m.arange(9.0, dtype=m.float64).reshape(3, 3) / 10
    A = (a @ a.mT + m.eye(3, dtype=m.float64)).requires_grad_()
    Q, R = m.linalg.qr(A)
    Q.data.mul_(2)  # (torch's LinalgQrBackward0 reads the saved Q's memory)
    return m.autograd.grad((Q * Q).sum(), A)


@pytest.mark.parametrize("device", DEVICES)
def test_qr_data_write_reaches_backward(device: str) -> None:
    same(_qr_data_written_in_place, device, decimals=7)
