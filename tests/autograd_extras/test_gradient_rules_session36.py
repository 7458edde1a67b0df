"""Session 36, gradient rules: the create_graph gradient of an op whose input gradient
PyTorch computes from its output by one op (``tanh_backward(g, y)`` and the like) is one
node saving ``(g, y)``, so that a write through the output's ``.data`` reaches the second-
and third-order gradients, as PyTorch's saved result shares that memory; ``threshold_``'s
node saves a copy of its input, so a later in-place change of its output is no error.
Compared with torch 2.13."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import same

SPECS = ["numpy", "torch:cpu"]


def _written_after_create_graph(op: str) -> Callable:
    """``op``'s output doubled through ``.data`` after a create_graph gradient: the grad_fn
    names of that gradient and of the next, and the second- and third-order gradients."""

    def program(m: Any) -> Any:
        a = m.tensor([[0.5, -0.3, 0.8], [0.1, 0.2, -1.0]], dtype=m.float64, requires_grad=True)
        d = getattr(a, op)(1) if "softmax" in op else getattr(a, op)()
        w = m.tensor([1.0, 2.0, 3.0], dtype=m.float64)
        (g,) = m.autograd.grad((d * d * w).sum(), a, create_graph=True)
        d.data.mul_(2)
        (h,) = m.autograd.grad((g * g).sum(), a, create_graph=True)
        names = [type(t.grad_fn).__name__ for t in (g, h)]
        return names, h, m.autograd.grad(h.sum(), a)

    return program


@pytest.mark.parametrize(
    "op",
    [
        "tanh",
        "sigmoid",
        "softmax",
        "log_softmax",
    ],
)
@pytest.mark.parametrize("spec", SPECS)
def test_output_written_after_create_graph(spec: str, op: str) -> None:
    """Before: tanh's and sigmoid's second-order gradients read the old output in part
    (gradients.py _tanh/_sigmoid composed g * (1 - y * y)), and their create_graph nodes were
    MulBackward0 (torch TanhBackwardBackward0, SigmoidBackwardBackward0)."""
    same(_written_after_create_graph(op), spec, decimals=8)


def _threshold_output_changed(change: str) -> Callable:
    """threshold_'s output changed in place, then backward through it."""

    def program(m: Any) -> Any:
        a = m.tensor([0.5, -0.3, 0.8], dtype=m.float64, requires_grad=True)
        y = m.nn.functional.threshold_(a * 1, 0.1, 2.0)
        getattr(y, change)()
        return type(y.grad_fn.next_functions[0][0]).__name__, m.autograd.grad(y.sum(), a)

    return program


@pytest.mark.parametrize("change", ["exp_", "neg_"])
@pytest.mark.parametrize("spec", SPECS)
def test_threshold_output_changed_in_place(spec: str, change: str) -> None:
    """PyTorch's ThresholdBackward1 saves a clone of threshold_'s input, not its result:
    changing the result in place before backward is no error (so ThresholdBackward1 stays
    out of node.py SAVES_OUTPUT)."""
    same(_threshold_output_changed(change), spec, decimals=8)
