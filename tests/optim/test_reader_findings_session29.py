"""Pre-existing divergences found by reader_r1 (session 29) while attacking the speed paths;
each compared with real torch (strict xfails: they fail today on both backends)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from snippet_outcomes import same

DEVICES = ["numpy", "torch:cpu"]


def _linear_weight_written_through_data(m: Any) -> Any:
    # PyTorch's addmm node saves the weight tensor: a write through .data (no version bump)
    # reaches its backward, so x's gradient is computed with the doubled weight
    w = (m.arange(48.0).reshape(12, 4) / 10).requires_grad_()
    b = m.zeros(12, requires_grad=True)
    x = m.ones(3, 2, 4, requires_grad=True)
    y = m.nn.functional.linear(x, w, b)
    w.data.mul_(2.0)
    y.sum().backward()
    return x.grad


@pytest.mark.parametrize("device", DEVICES)
def test_linear_weight_written_through_data_reaches_backward(device: str) -> None:
    same(_linear_weight_written_through_data, device)


def _sgd_momentum_grad_is_buffer(m: Any) -> Any:
    p = m.nn.Parameter(m.arange(3.0))
    opt = m.optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = m.ones(3)
    opt.step()
    p.grad = opt.state[p]["momentum_buffer"]  # the gradient is the buffer itself
    opt.step()
    return p, p.grad


@pytest.mark.parametrize("device", DEVICES)
def test_sgd_momentum_gradient_that_is_its_buffer(device: str) -> None:
    same(_sgd_momentum_grad_is_buffer, device)


def _sgd_grad_aliases_earlier_param(m: Any) -> Any:
    p = m.nn.Parameter(m.arange(3.0))
    q = m.nn.Parameter(m.arange(3.0) + 10)
    p.grad = m.ones(3)
    q.grad = p.data  # q's gradient shares p's memory
    m.optim.SGD([p, q], lr=1.0).step()
    return p, q


@pytest.mark.parametrize("device", DEVICES)
def test_sgd_gradient_sharing_an_earlier_parameter(device: str) -> None:
    same(_sgd_grad_aliases_earlier_param, device)


def _from_numpy_data_write_then_backward(m: Any) -> Any:
    y = m.from_numpy(np.arange(3.0)).requires_grad_()
    z = (y * y).sum()
    y.data.add_(m.ones(3, dtype=m.float64))  # .data: no version bump in PyTorch
    z.backward()
    return y.grad, y._version


@pytest.mark.parametrize("device", DEVICES)
def test_from_numpy_write_through_data_is_no_inplace_error(device: str) -> None:
    same(_from_numpy_data_write_then_backward, device)
