"""Named regression tests for what the autograd API sweep (test_sweep_autograd_api.py)
found: each compares the sweep's case with torch, and says what tensorweaver did before."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
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

    class Exp(tw.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            out = a.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (out,) = ctx.saved_tensors
            return g * out

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
