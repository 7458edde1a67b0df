"""Class targets of ``nll_loss`` and ``cross_entropy`` against torch 2.13: values, gradients
and errors (their classes, and the order of PyTorch's checks: the targets' form, the weight,
their range) where torch:cpu's kernel checks the range itself (``checked_indices``: the
core reads nothing back first) and where the core checks it (numpy)."""

from __future__ import annotations

from typing import Any

import pytest
import tensorweaver as tw
import torch
from snippet_outcomes import grid, outcome, same_each
from tw_backends import entered

SPECS = ("numpy", "torch:cpu")

#: 5 classes: 5, 7, -1 and -3 are out of range; -100 is ignored unless ignore_index moves
TARGETS = {
    "in_range": [0, 4, 2, 1],
    "ignored": [0, -100, 2, -100],
    "too_large": [0, 5, 2, 1],
    "negative": [0, -1, 2, 1],
    "ignored_and_bad": [0, -100, 7, -3],
    "all_ignored": [-100] * 4,
}


def _loss(
    fn: str, target: list, weight: str | None = None, shape: tuple = (4, 5), **kwargs: Any
) -> Any:
    """The program: ``fn`` of log-probabilities of ``shape`` (classes on axis 1) and
    ``target``, its value and the gradient; ``weight``: "good" (one per class), "short" (3)
    or "single" (float32)."""

    def program(m: Any) -> Any:
        x = (grid(m, *shape) / 7).sin().log_softmax(1).detach().requires_grad_()
        if weight is not None:
            n = 3 if weight == "short" else 5
            dtype = m.float32 if weight == "single" else m.float64
            kwargs["weight"] = m.arange(1.0, n + 1.0, dtype=dtype) / 3
        loss = getattr(m.nn.functional, fn)(x, m.tensor(target), **kwargs)
        loss.sum().backward()
        return loss, x.grad

    return program


def _programs(fn: str) -> dict:
    programs = {}
    for name, target in TARGETS.items():
        for reduction in ("none", "mean", "sum"):
            for weight in (None, "good"):
                key = f"{name}-{reduction}-{weight}"
                programs[key] = _loss(fn, target, weight, reduction=reduction)
    for name in ("in_range", "too_large", "negative"):  # PyTorch's weight check comes first
        for weight in ("short", "single"):
            programs[f"{name}-{weight}"] = _loss(fn, TARGETS[name], weight, reduction="sum")
    programs["ignore_index_is_C"] = _loss(fn, [0, 5, 2, 1], ignore_index=5)
    programs["ignore_index_in_range"] = _loss(fn, [0, 3, 3, 1], ignore_index=3)
    programs["ignore_index_negative"] = _loss(fn, [0, -1, 2, -100], ignore_index=-1)
    programs["int32_target"] = lambda m: getattr(m.nn.functional, fn)(
        m.zeros(4, 5), m.tensor([0, 9, 2, 1], dtype=m.int32), m.ones(3)
    )
    for name, target in TARGETS.items():  # (N, C, d): cross_entropy's nd kernel, nll2d
        programs[f"{name}-nd"] = _loss(fn, [target[:2], target[2:]], shape=(2, 5, 2))
    return programs


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("fn", ("nll_loss", "cross_entropy"))
def test_values_gradients_and_errors_like_torch(spec: str, fn: str) -> None:
    same_each(_programs(fn), spec, decimals=12)


@pytest.mark.parametrize("spec", SPECS)
def test_out_of_range_error_names_the_function_and_target(spec: str) -> None:
    with entered(spec):
        for fn, bad, reduction, shape in (
            ("nll_loss", 4, "sum", (3, 4)),
            ("cross_entropy", -2, "sum", (3, 4)),
            ("cross_entropy", 4, "mean", (3, 4)),  # (the fused kernel's)
            ("cross_entropy", -2, "mean", (3, 4, 1)),
        ):
            target = tw.tensor([0, bad, -100]).reshape(3, *shape[2:])
            with pytest.raises(IndexError, match=f"{fn}: target {bad} is out of bounds"):
                getattr(tw.nn.functional, fn)(tw.zeros(shape), target, reduction=reduction)


def test_bad_target_under_saved_tensors_hooks() -> None:
    """The Function path (saved_tensors_hooks) raises torch's class for a bad target."""

    def program(m: Any) -> Any:
        x = m.zeros(2, 3, requires_grad=True)
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            return m.nn.functional.nll_loss(x, m.tensor([1, 3]))

    with entered("torch:cpu"):
        assert outcome(program, tw) == outcome(program, torch) == "IndexError"
