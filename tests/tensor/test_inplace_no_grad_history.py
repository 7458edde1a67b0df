"""An in-place op under ``no_grad`` leaves the tensor's autograd history as it was, as in
PyTorch: a non-leaf keeps its ``grad_fn`` and gradients still flow to its inputs (it used to
become a leaf, and a backward through it left every input's ``.grad`` None)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

IN_PLACE: dict[str, Callable[[Any], Any]] = {
    "mul_": lambda t: t.mul_(2),
    "add_": lambda t: t.add_(1.5),
    "zero_": lambda t: t.zero_(),
    "clamp_": lambda t: t.clamp_(max=2.5),
    "setitem": lambda t: t.__setitem__(0, 7.0),
    "copy_": lambda t: t.copy_(t * 3),
}


def _run(m: Any, build: Callable, change: Callable) -> dict:
    w = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
    out = build(w)
    with m.no_grad():
        change(out)
    face = {
        "is_leaf": out.is_leaf,
        "requires_grad": out.requires_grad,
        "grad_fn": type(out.grad_fn).__name__ if out.grad_fn is not None else None,
        "value": np.asarray(out.detach()).tolist(),
    }
    try:
        (out * m.tensor([1.0, 10.0, 100.0], dtype=m.float64)).sum().backward()
        face["grad"] = None if w.grad is None else np.asarray(w.grad).tolist()
    except RuntimeError as e:
        face["error"] = "modified by an inplace operation" in str(e)
    return face


@pytest.mark.parametrize("change", IN_PLACE, ids=str)
def test_no_grad_in_place_keeps_the_history_of_a_linear_op(backend: str, change: str) -> None:
    # w * 2 saves nothing of its output: the backward runs as if the change never happened
    build = lambda w: w * 2  # noqa: E731
    assert _run(tw, build, IN_PLACE[change]) == _run(torch, build, IN_PLACE[change])


@pytest.mark.parametrize("change", ["mul_", "add_", "zero_"])
def test_no_grad_in_place_on_a_saved_output_raises_in_backward_as_torch(
    backend: str, change: str
) -> None:
    # exp's rule uses its output: its change, even under no_grad, makes backward raise, as
    # PyTorch's version counter does (TensorWeaver used the recorded values before)
    build = lambda w: w.exp()  # noqa: E731
    ours, theirs = _run(tw, build, IN_PLACE[change]), _run(torch, build, IN_PLACE[change])
    assert theirs["error"] and ours.get("error"), ours
    assert ours["grad_fn"] == theirs["grad_fn"] and ours["value"] == theirs["value"]


def test_no_grad_in_place_on_a_leaf_keeps_it_a_leaf(backend: str) -> None:
    for m in (tw, torch):
        w = m.ones(3, requires_grad=True)
        with m.no_grad():
            w.mul_(2)
        assert w.is_leaf and w.requires_grad and w.grad_fn is None
