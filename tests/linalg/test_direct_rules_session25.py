"""torch.triangular_solve and torch.linalg.lstsq with PyTorch's own gradient formulas
(session 25: autograd/linalg_rules.py ``triangular_solve_backward``, ``lstsq_backward``;
the torch backend computes lstsq whole), where their one node ran a nested backward of the
core's decomposition: outputs, gradients and what the node's hooks see as torch 2.13 gives
them, gradients by finite differences in float64, and a second backward (create_graph) as
torch's."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from gradcheck import gradcheck
from snippet_outcomes import same_each
from tensorweaver.ops.fusion import reference_only

SPECS = ["numpy", "torch:cpu"]


def _array(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _triangle(n: int, upper: bool = True, seed: int = 0) -> np.ndarray:
    """A well-conditioned triangular matrix (its other triangle random: never read)."""
    r = _array(n, n, seed=seed) * 0.5 + 3 * np.eye(n)
    return r if upper else r.T.copy()


def _leaf(m: Any, x: np.ndarray, grad: bool = True, complex_: bool = False) -> Any:
    return m.tensor(x, dtype=m.complex128 if complex_ else m.float64, requires_grad=grad)


def _traced(call: Callable[[Any], tuple], used: tuple = (0, 1)) -> Callable[[Any], Any]:
    """A program: ``call(m)`` gives (outputs, leaves); the node's name, the outputs, what its
    hook sees (shapes of the inputs' and outputs' gradients), and the leaves' gradients after
    a weighted loss of the outputs numbered ``used``."""

    def program(m: Any) -> Any:
        outs, leaves = call(m)
        fn = outs[0].grad_fn
        seen: list = []
        fn.register_hook(
            lambda gi, go: seen.append([None if g is None else tuple(g.shape) for g in (*gi, *go)])
        )
        loss = 0
        for i in used:
            out = outs[i]
            if out.numel():
                weights = m.arange(1.0, out.numel() + 1.0, dtype=m.float64).reshape(out.shape)
                loss = loss + (out.abs() ** 2 * weights).sum() * 0.1
        loss.backward()
        return fn.name(), tuple(outs), seen, [t.grad for t in leaves]

    return program


def _solve(
    upper: bool = True,
    transpose: bool = False,
    unit: bool = False,
    needs: tuple = (True, True),
    a_batch: tuple = (),
    b_shape: tuple = (2, 3, 2),
    complex_: bool = False,
) -> Callable[[Any], tuple]:
    def call(m: Any) -> tuple:
        a0 = _triangle(3, upper)
        if a_batch:
            a0 = np.broadcast_to(a0, (*a_batch, 3, 3)) + _array(*a_batch, 3, 3, seed=2) * 0.1
        b0 = _array(*b_shape, seed=1)
        if complex_:
            a0, b0 = a0 + 0.5j * _triangle(3, upper, seed=3), b0 - 1j * _array(*b_shape, seed=4)
        a = _leaf(m, a0, needs[1], complex_)
        b = _leaf(m, b0, needs[0], complex_)
        found = m.triangular_solve(b, a, upper=upper, transpose=transpose, unitriangular=unit)
        return found, [t for t in (b, a) if t.requires_grad]

    return call


TRIANGULAR = {
    "upper": _traced(_solve()),
    "lower_transposed_unit": _traced(_solve(upper=False, transpose=True, unit=True)),
    "upper_transposed": _traced(_solve(transpose=True)),
    "solution_only": _traced(_solve(), used=(0,)),
    # b's gradient is zeros where only A's copy is used (PyTorch's formula)
    "copy_only": _traced(_solve(), used=(1,)),
    "copy_only_b_alone": _traced(_solve(needs=(True, False)), used=(1,)),
    "b_without_grad": _traced(_solve(needs=(False, True))),
    "A_without_grad": _traced(_solve(needs=(True, False))),
    # before: A's copy kept A's own shape where b's batch broadcast it (torch copies the
    # broadcast A), and A's gradient from the copy was one batch's
    "A_broadcast": _traced(_solve(b_shape=(2, 3, 2))),
    "b_broadcast": _traced(_solve(a_batch=(2,), b_shape=(3, 2))),
    "complex": _traced(_solve(complex_=True)),
    "complex_transposed": _traced(_solve(transpose=True, complex_=True)),
}


@pytest.mark.parametrize("spec", SPECS)
def test_triangular_solve_gradients_and_hooks_like_torch(spec: str) -> None:
    same_each(TRIANGULAR, spec, decimals=6)


def _deficient() -> np.ndarray:
    """5 x 3 with singular values 2, 1 and 0.01: rcond=0.1 drops the last in the forward."""
    u = np.linalg.qr(_array(5, 3, seed=5))[0]
    v = np.linalg.qr(_array(3, 3, seed=6))[0]
    return u @ np.diag([2.0, 1.0, 0.01]) @ v.T


def _lstsq(
    a0: np.ndarray | None = None,
    b_shape: tuple = (5, 2),
    driver: str | None = None,
    rcond: float | None = None,
    needs: tuple = (True, True),
    complex_: bool = False,
) -> Callable[[Any], tuple]:
    def call(m: Any) -> tuple:
        a_values = _array(5, 3, seed=7) if a0 is None else a0
        b_values = _array(*b_shape, seed=8)
        if complex_:
            a_values = a_values + 0.5j * _array(*a_values.shape, seed=9)
            b_values = b_values - 1j * _array(*b_shape, seed=10)
        a = _leaf(m, a_values, needs[0], complex_)
        b = _leaf(m, b_values, needs[1], complex_)
        found = m.linalg.lstsq(a, b, rcond=rcond, driver=driver)
        return found, [t for t in (a, b) if t.requires_grad]

    return call


LSTSQ = {
    "gelsy": _traced(_lstsq()),
    "gelsd_residuals": _traced(_lstsq(driver="gelsd")),
    "gels_residuals_only": _traced(_lstsq(driver="gels"), used=(1,)),
    "gelss_B_alone": _traced(_lstsq(driver="gelss", needs=(False, True))),
    "gelsd_A_alone": _traced(_lstsq(driver="gelsd", needs=(True, False))),
    "vector_b": _traced(_lstsq(b_shape=(5,), driver="gelsd")),
    "wide": _traced(_lstsq(_array(3, 5, seed=11), b_shape=(3, 2))),
    "batched_A": _traced(_lstsq(np.stack([_array(5, 3, seed=7), _deficient()]), driver="gelsd")),
    "complex": _traced(_lstsq(driver="gelsd", complex_=True)),
    # PyTorch's backward takes pinv(A) at the default tolerance, whatever rcond
    "rcond_gelsd": _traced(_lstsq(_deficient(), driver="gelsd", rcond=0.1)),
}


@pytest.mark.parametrize("spec", SPECS)
def test_lstsq_gradients_and_hooks_like_torch(spec: str) -> None:
    same_each(LSTSQ, spec, decimals=6)


def _core_formula(program: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``program`` with the core's formula on tw (the torch backend computes lstsq whole)."""

    def run(m: Any) -> Any:
        if m is torch:
            return program(m)
        with reference_only():
            return program(m)

    return run


def test_lstsq_formula_on_torch_backend_like_torch() -> None:
    names = ("gelsd_residuals", "vector_b", "batched_A", "complex", "rcond_gelsd")
    same_each({name: _core_formula(LSTSQ[name]) for name in names}, "torch:cpu", decimals=6)


def _upper(a: Any) -> Any:
    return tw.triu(a) + 3 * tw.eye(a.shape[-1], dtype=a.dtype)


def test_gradients_match_finite_differences(backend: str) -> None:
    a, b = _array(3, 3, seed=12), _array(2, 3, 2, seed=13)
    gradcheck(lambda b, a: tw.triangular_solve(b, _upper(a))[0], b, a)
    gradcheck(lambda b, a: tw.triangular_solve(b, _upper(a), transpose=True)[0], b, a)
    gradcheck(lambda b, a: tw.triangular_solve(b, a, upper=False)[1] * 2.0, b, a)
    tall, rhs = _array(5, 3, seed=14), _array(5, 2, seed=15)
    gradcheck(lambda a, b: tw.linalg.lstsq(a, b).solution, tall, rhs)
    gradcheck(lambda a, b: tw.linalg.lstsq(a, b, driver="gelsd").residuals, tall, rhs)


def _second_order(call: Callable[[Any, Any, Any], Any], a0: np.ndarray, b0: np.ndarray) -> Any:
    """A program: the first gradients (create_graph) and the leaves' gradients of their
    squared norms."""

    def program(m: Any) -> Any:
        a, b = _leaf(m, a0), _leaf(m, b0)
        y = call(m, a, b)
        ga, gb = m.autograd.grad((y * y).sum(), (a, b), create_graph=True)
        ((ga * ga).sum() + (gb * gb).sum()).backward()
        return ga, gb, a.grad, b.grad

    return program


SECOND_ORDER = {
    "triangular_solve": _second_order(
        lambda m, a, b: m.triangular_solve(b, a, transpose=True)[0],
        _triangle(3),
        _array(3, 2, seed=16),
    ),
    "lstsq_solution": _second_order(
        lambda m, a, b: m.linalg.lstsq(a, b).solution, _array(5, 3, seed=17), _array(5, 2)
    ),
    "lstsq_residuals": _second_order(
        lambda m, a, b: m.linalg.lstsq(a, b, driver="gelsd").residuals,
        _array(5, 3, seed=18),
        _array(5, 2, seed=19),
    ),
}


@pytest.mark.parametrize("spec", SPECS)
def test_double_backward_like_torch(spec: str) -> None:
    same_each(SECOND_ORDER, spec, decimals=5)
