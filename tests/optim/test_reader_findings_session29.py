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


@pytest.mark.xfail(
    strict=True,
    reason="pre-existing (HEAD 9ffa9f1 too): linear with a bias (fused node on torch:cpu, "
    "addmm on numpy) keeps the weight's old array in its saved values; a .data write "
    "(mul_/copy_/sub_, add_ on torch:cpu) rebinds the weight's array, so backward uses "
    "the old weight where PyTorch uses the new one. nn/functional/linear.py linear / "
    "ops/composite.py fused_or_reference: re-read the weight at backward where its array "
    "changed without a version bump (as Resaved does for embedding's indices)",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="pre-existing: buf.mul_(momentum).add_(grad) where grad IS buf gives 1.8 buf in "
    "PyTorch (the add reads the scaled buffer); optim/sgd.py SGD._step_group reads the "
    "gradient arrays before foreach_update rebinds the buffer (1.9 buf)",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="pre-existing: PyTorch steps p in place first, so q steps along p's new values; "
    "optim/sgd.py SGD._step_group / ops/in_place_writes.py foreach_update rebind p (its "
    "array is shared with q.grad, so not written in place) and q reads p's old array",
)
@pytest.mark.parametrize("device", DEVICES)
def test_sgd_gradient_sharing_an_earlier_parameter(device: str) -> None:
    same(_sgd_grad_aliases_earlier_param, device)


def _from_numpy_data_write_then_backward(m: Any) -> Any:
    y = m.from_numpy(np.arange(3.0)).requires_grad_()
    z = (y * y).sum()
    y.data.add_(m.ones(3, dtype=m.float64))  # .data: no version bump in PyTorch
    z.backward()
    return y.grad, y._version


@pytest.mark.xfail(
    strict=True,
    reason="pre-existing: a write through .data of a NumPy-shared tensor bumps the tensor's "
    "own version (torch: 0), so backward raises 'modified by an inplace operation' where "
    "PyTorch returns 2 * (new values). tensor.py: the host-shared (_writes_through) write "
    "path of a .data alias (_own_counter) must not count on its base",
)
@pytest.mark.parametrize("device", DEVICES)
def test_from_numpy_write_through_data_is_no_inplace_error(device: str) -> None:
    same(_from_numpy_data_write_then_backward, device)
