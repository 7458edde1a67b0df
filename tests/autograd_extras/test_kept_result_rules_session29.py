"""hypot, polar and logcumsumexp as one node keeping its result, as PyTorch's HypotBackward0,
PolarBackward0 and LogcumsumexpBackward0 save theirs (session 29), compared with torch 2.13.

Before: hypot and polar were composites (scaled square roots; r cos, r sin) and a finite
logcumsumexp a scan of logaddexp nodes, so a write through ``.data`` into the result, or a
saved_tensors_hooks unpack, left the gradient that of the forward-time values (torch's reads
the written result), and polar's gradient at a zero or negative modulus was the calculus one
(torch's reads sgn(result): 0 at 0, negated below 0)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import tensorweaver as tw
from snippet_outcomes import same_each, walk

A = [[0.3, -1.2, 2.0], [0.7, 0.1, -0.4]]
B = [[1.1, 0.5, -0.2], [-0.6, 0.9, 1.3]]
#: op(m, a, b) -> a real tensor (polar's parts added), with a node of each op in its graph.
OPS: dict[str, Callable] = {
    "hypot": lambda m, a, b: m.hypot(a, b),
    "hypot of a constant": lambda m, a, b: m.hypot(a, b.detach()),
    "polar": lambda m, a, b: m.polar(a, b),
    "logcumsumexp": lambda m, a, b: m.logcumsumexp(a * b, 1),
    "logcumsumexp dim 0": lambda m, a, b: (a + b).logcumsumexp(0),
}


def _loss(m: Any, y: Any) -> Any:
    return (y.real * 0.5 + y.imag).sum() if y.is_complex() else (y * y).sum()


def _inputs(m: Any, a: list = A, b: list = B) -> list:
    return [m.tensor(v, dtype=m.float64, requires_grad=True) for v in (a, b)]


def _written(op: Callable) -> Callable:
    def program(m: Any) -> tuple:
        a, b = _inputs(m)
        y = op(m, a, b)
        y.data.mul_(2)
        _loss(m, y).backward()
        return a.grad, b.grad

    return program


def _hooked(op: Callable) -> Callable:
    """Each saved tensor comes back from the unpack hook doubled; the dtypes packed."""

    def program(m: Any) -> tuple:
        a, b = _inputs(m)
        seen: list = []

        def pack(t: Any) -> Any:
            seen.append(str(t.dtype).split(".")[-1])
            return t

        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t * 2):
            y = op(m, a, b)
        _loss(m, y).backward()
        return a.grad, b.grad, sorted(seen)

    return program


def _derivatives(op: Callable, a: list = A, b: list = B) -> Callable:
    """The node, the gradients of the loss (create_graph) and of their sum of squares."""

    def program(m: Any) -> list:
        inputs = _inputs(m, a, b)
        y = op(m, *inputs)
        grads = m.autograd.grad(_loss(m, y), inputs, create_graph=True)
        second = m.autograd.grad(sum((g * g).sum() for g in grads), inputs)
        return [walk(y.grad_fn, 2), grads, second]

    return program


def test_a_data_write_into_the_result_reaches_the_gradient(backend: str) -> None:
    same_each({name: _written(op) for name, op in OPS.items()}, backend)


def test_results_through_saved_tensor_hooks(backend: str) -> None:
    same_each({name: _hooked(op) for name, op in OPS.items()}, backend)


def test_first_and_second_derivatives(backend: str) -> None:
    zeros = [[0.0, -1.2, 0.0], [0.7, 0.1, -0.4]]
    programs = {name: _derivatives(op) for name, op in OPS.items()}
    # (torch's polar gradient reads sgn(result): 0 at a zero modulus, negated below zero;
    # hypot's where both are 0: NaN)
    programs["polar at 0"] = _derivatives(OPS["polar"], zeros)
    programs["hypot at 0"] = _derivatives(OPS["hypot"], zeros, zeros)
    programs["logcumsumexp with infinities"] = _derivatives(
        lambda m, a, b: m.logcumsumexp(a.log() * b.abs(), 1), zeros
    )
    same_each(programs, backend)


def test_half_logcumsumexp(backend: str) -> None:
    """(float16: the node keeps the float16 result, the scans accumulate in float32)"""

    def program(m: Any) -> list:
        a = m.tensor(A, dtype=m.float16, requires_grad=True)
        y = a.logcumsumexp(1)
        (g,) = m.autograd.grad((y * y).sum(), a, create_graph=True)
        second = m.autograd.grad((g * g).sum(), a)[0]
        y.data.mul_(2)
        y.sum().backward()
        return [g, second, a.grad]

    same_each({"float16": program}, backend, single=3)


@pytest.mark.parametrize("name", sorted(set(OPS) - {"hypot of a constant"}))
def test_finite_differences(name: str) -> None:
    # (positive moduli: below 0 torch's polar gradient is not the calculus one)
    inputs = _inputs(tw, [[abs(v) for v in row] for row in A])
    op = OPS[name]
    assert tw.autograd.gradcheck(lambda a, b: op(tw, a, b), inputs)
    assert tw.autograd.gradgradcheck(lambda a, b: op(tw, a, b), inputs)


def test_real_and_imag_node_names(backend: str) -> None:
    def program(m: Any) -> list:
        z = m.polar(*_inputs(m))
        return [walk(z.real.grad_fn, 1), walk(m.imag(z).grad_fn, 1)]

    same_each({"real and imag": program}, backend)
