"""Regression hunt over session 28's eager changes (reader L): views an in-place write
missed, ``.data`` and no-grad writes, the one-node ``logsumexp``/2-norm/``std`` that keep
their result, ``pow`` with a tensor exponent, saved indices, in-place ``add_``/``sub_``.
Each program runs on torch 2.13 and on tensorweaver with only the module changed
(:mod:`snippet_outcomes`).

The corners that match torch come first; the defects found follow at the end, each a strict
xfail naming the file and function at fault and the fix proposed.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import grad_fn_name as _name
from snippet_outcomes import grid as _grid
from snippet_outcomes import leaf as _leaf
from snippet_outcomes import same_each

Program = Callable[[Any], Any]

SPECS = ["numpy", "torch:cpu"]


# -- views written through their base, then used in a gradient ---------------------------------


def _no_grad_write(m: Any) -> Any:
    a = _leaf(m, 3, 4)
    b = a * 2
    v = b[1]
    with m.no_grad():
        b[1] = 7
    loss = (v * a[0]).sum()
    loss.backward()
    return loss, a.grad, _name(v)


def _data_write(m: Any) -> Any:
    a = _leaf(m, 2, 3)
    b = a * 1
    v = b[0]
    b.data.add_(1)
    loss = (v * a[1]).sum()
    loss.backward()
    return loss, a.grad, _name(v)


def _rnn_buffer(m: Any) -> Any:
    w = (_grid(m, 3, 3) / 10).requires_grad_()
    buf = m.zeros(4, 2, 3, dtype=m.float64)
    xs = _grid(m, 4, 2, 3) / 10
    for t in range(1, 4):
        buf[t] = m.tanh(xs[t] + buf[t - 1] @ w)
    buf.pow(2).sum().backward()
    return buf, w.grad, _name(buf)


def _rows_kept_in_training(m: Any) -> Any:
    w = (_grid(m, 8, 4) / 30).requires_grad_()
    rows = [w[i] for i in range(8)]
    opt = m.optim.SGD([w], lr=0.1, momentum=0.9, nesterov=True)
    for _ in range(3):
        opt.zero_grad()
        loss = sum((r * r).sum() * (i + 1) for i, r in enumerate(rows))
        loss.backward()
        opt.step()
    return loss, w, rows[3], _name(rows[0])


VIEWS = {
    "no_grad write": _no_grad_write,
    ".data write": _data_write,
    "rnn buffer": _rnn_buffer,
    "rows kept": _rows_kept_in_training,
}


@pytest.mark.parametrize("spec", SPECS)
def test_views_written_through_their_base(spec: str) -> None:
    same_each(VIEWS, spec)


# -- pow with a tensor exponent ------------------------------------------------------------------


def _pow_edges(m: Any) -> Any:
    b = m.tensor([0.0, 0.0, -2.0, -2.0, 2.0, 0.0], dtype=m.float64, requires_grad=True)
    e = m.tensor([-1.0, 0.5, 0.5, -3.0, 0.0, 2.0], dtype=m.float64, requires_grad=True)
    y = b**e
    y.sum().backward()
    return y, b.grad, e.grad, _name(y)


@pytest.mark.parametrize("spec", SPECS)
def test_pow_tensor_exponent_edges(spec: str) -> None:
    same_each({"pow edges": _pow_edges}, spec)


# -- defects found ------------------------------------------------------------------------------


def _unpacked_twice(op: Program) -> Program:
    """``op``'s input gradient where every saved tensor comes back doubled from the hooks:
    torch's gradient reads whatever the unpack hook gives, result included."""

    def program(m: Any) -> Any:
        a = (_leaf(m, 2, 3) / 4).detach().requires_grad_()
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 2):
            y = op(m, a)
        y.sum().backward()
        return a.grad

    return program


@pytest.mark.parametrize("spec", SPECS)
def test_vector_norm_result_goes_through_saved_tensor_hooks(spec: str) -> None:
    norm = _unpacked_twice(lambda m, a: m.linalg.vector_norm(a))
    same_each({"vector_norm": norm}, spec)


@pytest.mark.parametrize("spec", SPECS)
def test_logsumexp_and_norm_dim_results_go_through_hooks(spec: str) -> None:
    programs = {
        "logsumexp": _unpacked_twice(lambda m, a: a.logsumexp(1)),
        "norm dim": _unpacked_twice(lambda m, a: a.norm(dim=0)),
    }
    same_each(programs, spec)


@pytest.mark.parametrize("spec", SPECS)
def test_pow_tensor_exponent_result_goes_through_hooks(spec: str) -> None:
    def program(m: Any) -> Any:
        a = (_leaf(m, 2, 3) / 4).detach().requires_grad_()
        e = (_grid(m, 2, 3) / 5).requires_grad_()
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 2):
            y = a**e
        y.sum().backward()
        return a.grad, e.grad

    same_each({"pow": program}, spec)


@pytest.mark.parametrize("spec", SPECS)
def test_norm_second_derivative_at_zero(spec: str) -> None:
    def program(m: Any) -> Any:
        x = m.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=m.float64, requires_grad=True)
        (g,) = m.autograd.grad(x.norm(dim=1).sum(), x, create_graph=True)
        (gg,) = m.autograd.grad(g[1].sum(), x)
        return g, gg

    same_each({"norm at zero": program}, spec)


def _whole_number_aranges(m: Any) -> Any:
    return [
        m.arange(64.0),
        m.arange(-5.0, 100.0, 3.0, dtype=m.float32),
        m.arange(7.0, -20.0, -2.0, dtype=m.float64),
        m.arange(0.0, 2.0**24 + 8, 4096.0, dtype=m.float32),
    ]


@pytest.mark.parametrize("spec", SPECS)
def test_whole_number_float_aranges(spec: str) -> None:
    """The numpy backend's cheap path for float aranges of whole numbers (all exact) gives
    torch's values, as the emulation of torch's loop does for the others."""
    same_each({"whole numbers": _whole_number_aranges}, spec)
