"""Gradient rules that read what PyTorch's node saved (session 29), compared with torch 2.13.

Before: prod's rule recomputed the product of the others (torch divides its saved result by
the input where no element is 0: at an infinity its gradient is NaN, and its second
derivative there differed); max() over every element divided by a count of 0 (NaN where the
result is NaN or was written through ``.data``; torch's CPU node fills none: 0); pow's
exponent gradient took log(1) at a zero base (torch's second derivative there is NaN);
exp2 was a pow node (PowBackward2) that saved its input; pow kept its result outside
saved_tensors_hooks; a solve's result written through ``.data`` never reached its rule."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import result_doubled_through_data, same_each, walk

ZEROS_AND_INFINITIES = {
    "one zero": [[0.0, -1.2, 2.0], [0.7, 0.1, -0.4]],
    "two zeros": [[0.0, 0.0, 2.0], [0.7, 0.1, -0.4]],
    "an infinity": [[float("inf"), -1.2, 2.0], [0.7, 0.1, -0.4]],
}
PRODUCTS = {
    "prod": lambda m, t: t.prod(),
    "prod(0)": lambda m, t: t.prod(0),
    "prod(1, keepdim)": lambda m, t: t.prod(1, keepdim=True),
}


def _three_derivatives(op: Callable, values: list) -> Callable:
    """``op``'s node and the gradients of (op(t) ** 2).sum(), of its square's sum, and of
    that one's square's sum."""

    def program(m: Any) -> list:
        t = m.tensor(values, dtype=m.float64, requires_grad=True)
        y = op(m, t)
        found: list = [walk(y.grad_fn, 2)]
        loss = (y * y).sum()
        for order in range(3):
            (g,) = m.autograd.grad(loss, t, create_graph=order < 2)
            found.append(g)
            loss = (g * g).sum()
        return found

    return program


@pytest.mark.parametrize("op", sorted(PRODUCTS))
def test_prod_derivatives_at_zeros_and_infinities(backend: str, op: str) -> None:
    programs = {
        name: _three_derivatives(PRODUCTS[op], values)
        for name, values in ZEROS_AND_INFINITIES.items()
    }
    same_each(programs, backend)


def test_max_and_min_of_every_element_where_none_is_equal(backend: str) -> None:
    def nan_result(m: Any) -> list:
        found = []
        for op in (m.max, m.min):
            x = m.tensor([1.0, float("nan"), float("nan"), 2.0], dtype=m.float64)
            x.requires_grad_()
            op(x).backward()
            found.append(x.grad)
        return found

    def written_result(m: Any) -> list:
        found = []
        for op in (m.max, m.min, m.amax):
            x = m.tensor([1.0, 3.0, 3.0, 2.0], dtype=m.float64, requires_grad=True)
            y = op(x)
            y.data.mul_(2)
            y.backward()
            found.append(x.grad)
        return found

    same_each({"NaN result": nan_result, "written result": written_result}, backend)


def test_pow_second_derivative_at_a_zero_base(backend: str) -> None:
    values = [[0.0, -1.2, 2.0], [0.7, 0.0, -0.4]]
    programs = {
        "number base 0": _three_derivatives(lambda m, t: m.pow(0.0, t.abs()), values),
        "tensor base 0": _three_derivatives(lambda m, t: (t * 0).pow(t), values),
    }
    same_each(programs, backend)


def _hooked(op: Callable, *values: list) -> Callable:
    """The inputs' gradients of op(*inputs).sum() where each saved tensor comes back from
    the unpack hook doubled, and the sorted dtypes the pack hook saw."""

    def program(m: Any) -> tuple:
        inputs = [m.tensor(v, dtype=getattr(m, d), requires_grad=True) for v, d in values]
        seen: list = []

        def pack(t: Any) -> Any:
            seen.append(str(t.dtype).split(".")[-1])
            return t

        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t * 2):
            y = op(m, *inputs)
        y.sum().backward()
        return tuple(t.grad for t in inputs), sorted(seen)

    return program


def test_results_through_saved_tensor_hooks(backend: str) -> None:
    programs = {
        "exp2": _hooked(lambda m, x: m.exp2(x), ([0.5, -1.0, 3.0], "float64")),
        "prod": _hooked(lambda m, x: x.prod(), ([0.5, -1.0, 3.0], "float64")),
        # (a float64 result of a float32 base: the packed result has the result's dtype)
        "pow of two dtypes": _hooked(
            lambda m, a, e: a**e, ([0.5, 1.5, 2.0], "float32"), ([0.2, -1.0, 3.0], "float64")
        ),
    }
    same_each(programs, backend)


def test_exp2_node_and_double_backward(backend: str) -> None:
    def program(m: Any) -> list:
        x = m.tensor([0.5, -1.0, 3.0], dtype=m.float64, requires_grad=True)
        y = m.exp2(x)
        (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        return [walk(y.grad_fn, 2), walk(g.grad_fn, 3), m.autograd.grad((g * g).sum(), x)[0]]

    same_each({"exp2": program}, backend)


def test_solve_result_written_through_data_reaches_its_gradient() -> None:
    """(numpy: the core's node; torch:cpu computes linalg functions whole, see
    test_data_written_results_session28.py)"""
    same_each(
        {"solve": result_doubled_through_data(lambda m, a: m.linalg.solve(a, a[:, :1] + 1))},
        "numpy",
    )


def test_upper_cholesky_result_written_through_data() -> None:
    op = result_doubled_through_data(
        lambda m, a: m.linalg.cholesky(a @ a.mT + m.eye(2, dtype=a.dtype), upper=True)
    )
    same_each({"cholesky upper": op}, "numpy")
