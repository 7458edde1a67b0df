"""Neighbours of the node fixes of the twenty-third session (the failing cases themselves are
in tests/ports/test_review_session23_reader_b.py): a fused instance norm's next_functions
(the torch:cpu backend's kernel) walk as torch's graph; changing one output of var_mean in
place is allowed as in torch (its node saves neither output); an in-place shape change of a
saved output refuses backward, as torch's version bump does; a batched linear's hook."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from snippet_outcomes import walk

_IMG = np.random.default_rng(3).standard_normal((2, 3, 4, 4))


def _instance_norm_graph(m: Any, weight: bool, bias: bool, after: bool) -> Any:
    x = m.tensor(_IMG, requires_grad=True)
    w = m.ones(3, dtype=m.float64, requires_grad=True) if weight else None
    b = m.zeros(3, dtype=m.float64, requires_grad=True) if bias else None
    y = m.nn.functional.instance_norm(x, weight=w, bias=b)
    if after:  # (PyTorch's node keeps its edges once backward freed it)
        y.sum().backward()
    return walk(y.grad_fn, 4)


@pytest.mark.parametrize(
    "weight, bias, after", [(False, False, False), (True, True, True), (True, False, False)]
)
def test_fused_instance_norm_next_functions(weight: bool, bias: bool, after: bool) -> None:
    want = _instance_norm_graph(torch, weight, bias, after)
    with tw.device("torch:cpu"):
        assert _instance_norm_graph(tw, weight, bias, after) == want


@pytest.mark.parametrize("which", [0, 1])
def test_var_mean_output_changed_in_place_backward(which: int) -> None:
    def grad_of(m: Any) -> np.ndarray:
        x = m.tensor(_IMG[0, 0], requires_grad=True)
        outs = m.var_mean(x, 1)
        outs[which].mul_(3)
        (outs[0].sum() + (outs[1] ** 2).sum()).backward()
        return np.asarray(x.grad.tolist())

    np.testing.assert_allclose(grad_of(tw), grad_of(torch), rtol=1e-12, atol=1e-12)


def _linear_node(m: Any, case: str) -> Any:
    """The name of a batched linear's node and what a hook on it sees, or the class of its
    refusal: ``case`` makes the bias or the input not contiguous."""
    rng = np.random.default_rng(5)
    w = m.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    x = m.tensor(rng.standard_normal((2, 3, 2)), requires_grad=True)
    x = x.transpose(1, 2) if case == "input" else x.transpose(1, 2).contiguous()
    y = m.nn.functional.linear(x, w, w[:, 0] if case == "bias" else w[:, 1].contiguous())
    seen: list = []
    try:
        y.grad_fn.register_hook(lambda gi, go: seen.append([tuple(g.shape) for g in gi]))
    except RuntimeError as e:
        return y.grad_fn.name(), type(e).__name__
    y.sum().backward()
    return y.grad_fn.name(), seen


def test_batched_linear_hook_contiguous() -> None:
    assert _linear_node(tw, "contiguous") == _linear_node(torch, "contiguous")


@pytest.mark.parametrize("case", ["bias", "input"])
def test_batched_linear_not_contiguous_node(case: str) -> None:
    assert _linear_node(tw, case) == _linear_node(torch, case)


def _shape_change_of_saved_output(m: Any, op: str, args: tuple) -> Any:
    """``exp``'s output (its node saves it) changed in shape in place, a no-op too; then
    backward: the class of the error, or the gradient."""
    x = m.tensor(_IMG[0, 0, :2, :3], requires_grad=True)
    y = x.exp()
    getattr(y, op)(*args)
    try:
        y.sum().backward()
    except RuntimeError as e:
        return type(e).__name__
    return x.grad.tolist()


@pytest.mark.parametrize("op, args", [("t_", ()), ("squeeze_", ()), ("unsqueeze_", (1,))])
def test_shape_change_of_saved_output_refuses_backward(op: str, args: tuple) -> None:
    want = _shape_change_of_saved_output(torch, op, args)
    assert _shape_change_of_saved_output(tw, op, args) == want


def test_recorded_references_are_those_with_fused_steps() -> None:
    # (composite.py records a reference's node only for these: the two lists must agree)
    from tensorweaver.autograd.grad_fn import _FUSED_STEPS
    from tensorweaver.ops.composite import OWN_NODES, STEPPED_REFERENCES

    assert STEPPED_REFERENCES == set(_FUSED_STEPS) - OWN_NODES
