"""Named regression tests for what the autograd API sweep (test_sweep_autograd_api.py)
found: each compares the sweep's case with torch, and says what tensorweaver did before."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from snippet_outcomes import exp_saving_its_output
from test_sweep_autograd_api import compare


def test_second_backward_frees_saved_tensors(backend: str) -> None:
    """A graph that saved no tensor now runs backward twice, as torch's; one that did still
    drops its saved tensors after the first backward (the array exp saved is freed) and
    raises torch's error on the second."""
    x = tw.tensor(np.linspace(-1.0, 1.0, 6), requires_grad=True)
    h = x.exp()
    saved = weakref.ref(h.native)
    loss = (h + 1).mean()
    del h
    assert saved() is not None  # exp's node holds its output for backward
    loss.backward()
    assert saved() is None
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: (t + 1).sum(),
        lambda t: (-t).reshape(3, 2).sum(),
        lambda t: t.mean(),
        lambda t: t[1:].flip(0).sum(),
    ],
)
def test_second_backward_without_saved_tensors_accumulates(backend: str, fn: Any) -> None:
    """Before: RuntimeError on the second backward of (x + 1).sum(); torch sums both."""
    grads = []
    for m in (tw, torch):
        x = m.tensor(np.linspace(-1.0, 1.0, 6), requires_grad=True)
        y = fn(x)
        y.backward()
        y.backward()
        grads.append(np.array(x.grad.tolist()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


@pytest.mark.parametrize(
    "case",
    [
        "grad_kept_in_place",  # before: a new .grad object; an old reference kept the old sum
        "grad_set_then_accumulated",  # before: an assigned .grad was not added to in place
        "grad_create_graph_new_object",  # before: the plain backward after it made a new one
        "grad_inputs_in_place",  # before: backward(inputs=) made a new .grad too
    ],
)
def test_grad_accumulates_in_place(backend: str, case: str) -> None:
    """torch's AccumulateGrad adds into an existing ``.grad`` in place outside grad mode
    (a new tensor under create_graph); tensorweaver always made a new tensor."""
    compare(case, 0)


@pytest.mark.parametrize("case", ["grad_setter_shape", "grad_setter_not_tensor"])
def test_grad_setter_checks(backend: str, case: str) -> None:
    """Before: ``p.grad = t`` took a tensor of another shape, or a list, silently; torch
    raises RuntimeError (shape) and TypeError (not a tensor)."""
    compare(case, 0)


def test_grad_setter_own_grad_and_device() -> None:
    """A tensor cannot be its own grad, nor take one on another device (torch's checks)."""
    p = tw.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="own grad"):
        p.grad = p
    q = tw.ones(2, device="numpy", requires_grad=True)
    with pytest.raises(RuntimeError, match="device"):
        q.grad = tw.ones(2, device="torch:cpu")


@pytest.mark.parametrize(
    "case",
    [
        "backward_function_inputs",  # before: AttributeError ('list' has no requires_grad)
        "backward_grad_tensors",  # the same: tw.autograd.backward took one tensor
        "backward_grad_tensors_wrong_count",
        "backward_inputs_empty",  # before: no error for inputs=[]
        "grad_empty_inputs",  # before: grad(y, []) returned ()
        "grad_outputs_wrong_count",  # before: zip dropped the tensor without a gradient
    ],
)
def test_backward_and_grad_arguments(backend: str, case: str) -> None:
    compare(case, 0)


@pytest.mark.parametrize(
    "case",
    [
        "grad_batched",  # before: TypeError, no is_grads_batched
        "grad_batched_two_outputs",
        "grad_batched_unused",
        "grad_only_inputs",  # before: TypeError, no only_inputs
        "grad_materialize_not_allow_unused",  # before: no ValueError
        "grad_materialize_create_graph",  # before: zeros not requiring grad (x * 0, -0.0)
        "retain_grad_not_in_autograd_grad",  # before: autograd.grad left .grad None
    ],
)
def test_autograd_grad_options(backend: str, case: str) -> None:
    compare(case, 0)


@pytest.mark.parametrize(
    "case",
    [
        "hook_sees_no_graph",  # before: a leaf's hooks ran with grad mode on in backward()
        "post_accumulate_hook_create_graph",  # before: not run under create_graph=True
        "post_accumulate_hook_inputs",  # before: not run for backward(inputs=[p])
    ],
)
def test_hooks_like_torch(backend: str, case: str) -> None:
    compare(case, 0)


@pytest.mark.parametrize(
    "case",
    [
        "modes_decorators",  # before: @set_grad_enabled(False) left grad mode off for good
        "no_grad_generator",  # before: a decorated generator's body ran with grad mode on
    ],
)
def test_grad_mode_decorators(backend: str, case: str) -> None:
    try:
        compare(case, 0)
    finally:
        torch.set_grad_enabled(True)
        tw.set_grad_enabled(True)


@pytest.mark.parametrize(
    "case",
    [
        "function_dirty_leaf",  # before: a leaf that requires grad was marked dirty silently
        "function_grad_for_non_tensor",  # before: a gradient for a float argument was dropped
        "function_too_many_grads",  # before: extra gradients were dropped
        "function_too_few_grads",
        "function_saved_non_leaf_output",  # before: a saved output had no graph: the
        # gradient under create_graph did not require grad
        "function_saved_after_free_access",  # before: saved_tensors after backward worked
        "function_save_non_tensor",  # before: save_for_backward(a, 3) was taken
        "function_two_outputs_one_used",
    ],
)
def test_function_like_torch(backend: str, case: str) -> None:
    compare(case, 0)


def test_function_saved_output_second_derivative(backend: str) -> None:
    """A Function that saves its output (exp): d2/dx2 through its backward is exp(x), by
    central differences of the first derivative (before: no graph, grad() raised)."""
    Exp = exp_saving_its_output(tw)

    def first(x0: np.ndarray) -> np.ndarray:
        x = tw.tensor(x0, requires_grad=True)
        (g,) = tw.autograd.grad(Exp.apply(x).sum(), x)
        return np.asarray(g)

    x0 = np.linspace(-1.0, 1.0, 5)
    x = tw.tensor(x0, requires_grad=True)
    (g,) = tw.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)
    (h,) = tw.autograd.grad(g.sum(), x)
    eps = 1e-6
    numeric = (first(x0 + eps) - first(x0 - eps)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(h), numeric, rtol=1e-7)


def test_non_leaf_inputs_grad_is_a_new_sum(backend: str) -> None:
    """Before: backward(inputs=[y]) on a non-leaf added into y.grad in place, so a reference
    to the first y.grad saw the second sum; torch adds out of place there (as retain_grad)."""
    seen = []
    for m in (torch, tw):
        x = m.tensor(np.linspace(-1.0, 1.0, 4), requires_grad=True)
        y = x * 2
        loss = (y * y).sum()
        loss.backward(inputs=[y], retain_graph=True)
        first = y.grad
        loss.backward(inputs=[y])
        seen.append((first.tolist(), y.grad.tolist(), y.grad is first))
    assert seen[0] == seen[1]


def test_function_returning_a_saved_input_keeps_it_an_input(backend: str) -> None:
    """Before: forward returning its saved input unchanged made saved_tensors give it back
    attached to the Function's node, so the second derivative went through the Function
    again ([2, 3] for torch's [1, 1])."""

    def run(m: Any) -> list:
        class Same(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                (x,) = ctx.saved_tensors
                return g * x

        x = m.tensor([2.0, 3.0, -1.5], dtype=m.float64, requires_grad=True)
        (g,) = m.autograd.grad(Same.apply(x).sum(), x, create_graph=True)
        (h,) = m.autograd.grad(g.sum(), x)
        return [g.tolist(), h.tolist()]

    assert run(tw) == run(torch)


def test_function_unused_output_holding_inf_gets_zeros(backend: str) -> None:
    """Before: backward through one output of a two-output Function gave the other output's
    gradient as ``output * 0``, NaN where that output is inf, so x.grad was NaN; torch
    materializes zeros."""

    def run(m: Any) -> list:
        class Two(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x * 2, x.exp() * float("inf")

            @staticmethod
            def backward(ctx: Any, g1: Any, g2: Any) -> Any:
                return g1 * 2 + g2

        x = m.tensor([1.0, -2.0, 0.5], dtype=m.float64, requires_grad=True)
        first, _ = Two.apply(x)
        first.sum().backward()
        return x.grad.tolist()

    assert run(tw) == run(torch)


def _function_second_backward(m: Any, read_saved: bool) -> Any:
    class Twice(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            ctx.k = 3.0
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            if read_saved:
                (x,) = ctx.saved_tensors
                return g * x
            return g * ctx.k

    x = m.tensor([1.0, -2.0], dtype=m.float64, requires_grad=True)
    y = Twice.apply(x).sum()
    y.backward()
    try:
        y.backward()
    except RuntimeError as error:
        return "raises", "second time" in str(error)
    return x.grad.tolist()


def test_function_second_backward_reading_saved_tensors_raises(backend: str) -> None:
    assert _function_second_backward(tw, True) == _function_second_backward(torch, True)


def test_function_second_backward_without_reading_saved_tensors(backend: str) -> None:
    assert _function_second_backward(tw, False) == _function_second_backward(torch, False)


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, t: m.add(t, t, alpha=2),
        lambda m, t: t.reshape(2, 3).tril(),
        lambda m, t: t.cumsum(0),
    ],
)
def test_second_backward_through_composites(backend: str, fn: Any) -> None:
    grads = []
    for m in (tw, torch):
        x = m.tensor(np.linspace(-1.0, 1.0, 6), requires_grad=True)
        y = fn(m, x).sum()
        y.backward()
        y.backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1]
