"""Reader U2, session 36: second-order gradients after `.data` writes, and norm(p=1) under
saved_tensors_hooks, compared with torch 2.13."""

from __future__ import annotations

import pytest
from snippet_outcomes import same

SPECS = ["numpy", "torch:cpu"]


def _mm_input_written(m):
    a = m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64, requires_grad=True)
    b = m.tensor([[0.5, -1.0], [2.0, 1.0]], dtype=m.float64, requires_grad=True)
    g = m.autograd.grad((a @ b).sum() ** 2, b, create_graph=True)[0]
    a.data.mul_(2)
    return m.autograd.grad(g.sum(), (a, b))


@pytest.mark.parametrize("spec", SPECS)
def test_matmul_double_backward_after_input_data_write(spec):
    same(_mm_input_written, spec)


def _softmax_output_written(op):
    def program(m):
        x = (m.arange(1.0, 7.0, dtype=m.float64).reshape(2, 3) / 7).requires_grad_()
        y = op(m, x)
        w = m.arange(6.0, dtype=m.float64).reshape(2, 3)
        g = m.autograd.grad((y * w).sum(), x, create_graph=True)[0]
        y.data.fill_(0.5)
        return m.autograd.grad((g**2).sum(), x)[0]

    return program


@pytest.mark.parametrize(
    "op",
    [lambda m, x: x.softmax(1), lambda m, x: x.log_softmax(1)],
    ids=["softmax", "log_softmax"],
)
@pytest.mark.parametrize("spec", SPECS)
def test_softmax_double_backward_after_output_data_write(spec, op):
    same(_softmax_output_written(op), spec)


def _norm1_output_changed(m):
    x = (m.arange(1.0, 13.0, dtype=m.float64).reshape(3, 4) / 7).requires_grad_()
    with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = m.norm(x, p=1, dim=1)
        y.mul_(3)
    return m.autograd.grad(y.sum(), x)[0]


def _norm1_packed(m):
    packed = []
    x = (m.arange(1.0, 13.0, dtype=m.float64).reshape(3, 4) / 7).requires_grad_()
    hook = lambda t: packed.append(tuple(t.shape)) or t  # noqa: E731
    with m.autograd.graph.saved_tensors_hooks(hook, lambda t: t):
        m.norm(x, p=1, dim=1)
    return packed


@pytest.mark.parametrize("program", [_norm1_output_changed, _norm1_packed], ids=["mul_", "packs"])
@pytest.mark.parametrize("spec", SPECS)
def test_norm_p1_under_saved_tensors_hooks(spec, program):
    same(program, spec)
