"""Reader r1, session 35: packed saved outputs changed in place (shape changes refused as
PyTorch's backward refuses them), and older defects of in-place changes as strict xfails."""

from __future__ import annotations

import gc
import weakref
from typing import Any, Callable

import pytest
from snippet_outcomes import same, same_each

SPECS = ["numpy", "torch:cpu"]


def _packed_output_changed(
    op: Callable, change: Callable, hook: Callable = lambda t: t
) -> Callable:
    """A program: ``op`` of a non-leaf under a saved_tensors_hooks whose pack hook is
    ``hook``, its output changed by ``change`` under no_grad, then backward; a.grad."""

    def program(m: Any) -> Any:
        a = m.tensor([[0.7, 0.5], [0.3, 1.5]], dtype=m.float64, requires_grad=True)
        b = a * 1
        with m.autograd.graph.saved_tensors_hooks(hook, lambda t: t):
            y = op(b)
        with m.no_grad():
            change(y)
        w = m.arange(1.0, y.numel() + 1.0, dtype=m.float64).reshape(y.shape)
        (y * w).sum().backward()
        return a.grad

    return program


# --- REGRESSION 1 -------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
def test_packed_output_shape_changed_in_place_refused(spec: str) -> None:
    same_each(
        {
            "logsumexp keepdim, t_": _packed_output_changed(
                lambda b: b.logsumexp(1, keepdim=True), lambda y: y.t_()
            ),
            "softmax, unsqueeze_": _packed_output_changed(
                lambda b: b.softmax(1), lambda y: y.unsqueeze_(0)
            ),
        },
        spec,
    )


# --- REGRESSION 2 -------------------------------------------------------------------------
def _input_freed_after_packed_output_changed(m: Any) -> Any:
    """Whether exp's input dies with its output (gc off), the output packed by an identity
    hook and changed in place."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        a = x * 1
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = a.exp()
        with m.no_grad():
            y.mul_(2)
        ref = weakref.ref(a)
        del a, y
        return ref() is None
    finally:
        if enabled:
            gc.enable()


@pytest.mark.parametrize("spec", SPECS)
def test_input_not_kept_by_packed_output_cycle(spec: str) -> None:
    same(_input_freed_after_packed_output_changed, spec)


# --- older ---------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
def test_packed_reduction_output_mul_with_grad(spec: str) -> None:
    def program(op: Callable) -> Callable:
        def run(m: Any) -> Any:
            a = m.tensor([[0.7, 0.5], [0.3, 1.5]], dtype=m.float64, requires_grad=True)
            with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                y = op(a)
            y.mul_(2)
            (y * m.tensor([1.0, 2.0], dtype=m.float64)).sum().backward()
            return a.grad

        return run

    same_each(
        {
            "logsumexp": program(lambda a: a.logsumexp(1)),
            "prod": program(lambda a: a.prod(1)),
            "norm": program(lambda a: a.norm(dim=1)),
        },
        spec,
    )


@pytest.mark.parametrize("spec", SPECS)
def test_packed_linalg_output_changed(spec: str) -> None:
    def clone(t: Any) -> Any:
        return t.clone()

    def data_mul(y: Any) -> None:
        y.data.mul_(3)

    same_each(
        {
            "det, clone hook, .data": _packed_output_changed(lambda b: b.det(), data_mul, clone),
            "inv, identity, no_grad mul_": _packed_output_changed(
                lambda b: b.inverse(), lambda y: y.mul_(2)
            ),
            "det, identity, no_grad mul_": _packed_output_changed(
                lambda b: b.det(), lambda y: y.mul_(2)
            ),
        },
        spec,
    )


def _shape_changed_after_use(change: Callable, leaf: bool) -> Callable:
    def program(m: Any) -> Any:
        x = m.arange(1.0, 7.0, dtype=m.float64).reshape(2, 3).requires_grad_()
        a = x if leaf else x * 1
        y = a.exp() if leaf else None
        with m.no_grad():
            change(a)
        if y is None:  # (used after the change, in a broadcasting op)
            y = a * m.arange(1.0, 25.0, dtype=m.float64).reshape(4, *a.shape)
        y.sum().backward()
        return x.grad

    return program


@pytest.mark.parametrize("spec", SPECS)
def test_leaf_shape_changed_in_place_after_use(spec: str) -> None:
    """A leaf whose shape changed in place under no_grad after an op used it: PyTorch copies
    the gradient into the leaf's new shape, broadcasting (unsqueeze_), and refuses where it
    cannot (t_). Before: the leaf's .grad stayed None (its in-place change under no_grad
    was recorded as a view made under no_grad, which has no accumulator: reader r1)."""
    same_each(
        {
            "leaf t_ after use": _shape_changed_after_use(lambda a: a.t_(), True),
            "leaf unsqueeze_ after use": _shape_changed_after_use(lambda a: a.unsqueeze_(0), True),
        },
        spec,
    )


@pytest.mark.parametrize("spec", SPECS)
def test_shape_changed_in_place_gradient_refused(spec: str) -> None:
    same_each(
        {
            "non-leaf t_ then used": _shape_changed_after_use(lambda a: a.t_(), False),
            "non-leaf transpose_": _shape_changed_after_use(lambda a: a.transpose_(0, 1), False),
            "non-leaf as_strided_": _shape_changed_after_use(
                lambda a: a.as_strided_((3, 2), (1, 3)), False
            ),
        },
        spec,
    )


@pytest.mark.parametrize("spec", SPECS)
def test_many_unsqueeze_in_place_after_use(spec: str) -> None:
    def program(m: Any) -> Any:
        x = m.arange(1.0, 7.0, dtype=m.float64).reshape(2, 3).requires_grad_()
        a = x * 1
        y = a.exp()
        with m.no_grad():
            for _ in range(40):
                a.unsqueeze_(0)
        y.sum().backward()
        return x.grad

    same(program, spec)


@pytest.mark.parametrize("spec", SPECS)
def test_function_grad_fn_needs_input_grad(spec: str) -> None:
    def program(m: Any) -> Any:
        class Scale(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, w: Any, k: float) -> Any:
                return x * w * k

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g, g, None

        x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
        y = Scale.apply(x, m.tensor([3.0, 4.0], dtype=m.float64), 2.0)
        return y.grad_fn.needs_input_grad

    same(program, spec)
