"""Autograd history reaching tensors through memory, as torch 2.13's (session 17's review).

Each case runs the same program on torch and on tensorweaver (both backends) and compares
what a user sees: the gradient, ``requires_grad``, or the exception.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import tensorweaver as tw

torch = pytest.importorskip("torch")


def _outcome(program: Callable[[Any], Any], m: Any) -> Any:
    try:
        return program(m)
    except RuntimeError as error:
        return f"RuntimeError: {str(error)[:40]}"


def _like_torch(program: Callable[[Any], Any]) -> None:
    assert _outcome(program, tw) == _outcome(program, torch)


def _row_taken_before_a_write(m: Any) -> tuple:
    out = m.zeros(2, 3, dtype=m.float64)
    first_row = out[0]  # a view of memory that has no history yet
    w = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
    out[0] = w * 2
    ((first_row**2).sum() + out.sum()).backward()
    return first_row.requires_grad, w.grad.tolist()


def _transpose_taken_before_an_add(m: Any) -> tuple:
    x = m.zeros(2, 2, dtype=m.float64)
    v = x.T
    w = m.tensor(3.0, dtype=m.float64, requires_grad=True)
    x[0].add_(w)
    (v * v).sum().backward()
    return v.requires_grad, w.grad.item()


def _view_of_a_view_before_a_write(m: Any) -> tuple:
    x = m.zeros(3, 4, dtype=m.float64)
    corner = x[1:, :2][0]
    w = m.tensor([1.0, -2.0], dtype=m.float64, requires_grad=True)
    x[1, :2] = w.exp()
    (corner * m.tensor([2.0, 5.0], dtype=m.float64)).sum().backward()
    return corner.requires_grad, w.grad.tolist()


@pytest.mark.parametrize(
    "program",
    [_row_taken_before_a_write, _transpose_taken_before_an_add, _view_of_a_view_before_a_write],
)
def test_a_view_taken_before_its_base_gains_history_gets_it(backend: str, program) -> None:
    _like_torch(program)


def _times_a_leaf_in_place(op: str) -> Callable[[Any], Any]:
    def program(m: Any) -> list:
        x = m.tensor([1.0, 2.0, 3.0], dtype=m.float64)
        w = m.tensor(2.0, dtype=m.float64, requires_grad=True)
        if op == "*=":
            x *= w
        else:
            getattr(x, op)(w)
        x.sum().backward()
        return [x.requires_grad, round(w.grad.item(), 12)]

    return program


@pytest.mark.parametrize("op", ["*=", "mul_", "div_", "pow_", "atan2_", "add_", "sub_"])
def test_an_in_place_op_by_a_tensor_requiring_grad_records_history(backend: str, op) -> None:
    _like_torch(_times_a_leaf_in_place(op))


def _data_set_between_forward_and_backward(m: Any) -> list:
    w = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
    x = m.tensor([3.0, 4.0], dtype=m.float64, requires_grad=True)
    y = (w * x).sum()
    w.data = m.tensor([5.0, 6.0], dtype=m.float64)
    y.backward()
    return [x.grad.tolist(), w.grad.tolist(), w._version]


def test_setting_data_keeps_the_version_as_torch(backend: str) -> None:
    _like_torch(_data_set_between_forward_and_backward)
