"""Helper V, session 35: what keeps a graph alive when a pack hook hands back the saved
output of an ``autograd.Function`` node itself or an alias of it (``detach()``, ``.cpu()``
on a CPU backend, ``save_on_cpu``). PyTorch's node holds edges, not its inputs: the input
dies with its last name, even where the output stays in a cycle with its node (PyTorch
frees that output never; the programs below read only the input). Here the Function's node
holds its input tensors (``node.inputs``) and call arguments (``node.saved[2]``), so the
cycle output -> node -> packed output keeps the input until the garbage collector runs,
with or without an alias in the cycle: an alias holding its origin (tensor.py ``_alias_of``)
is not what keeps it."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from snippet_outcomes import exp_saving_its_output, same

_HOOKS = {
    "identity": lambda m: m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t),
    "detach": lambda m: m.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t),
    "cpu": lambda m: m.autograd.graph.saved_tensors_hooks(lambda t: t.cpu(), lambda t: t),
}
_OPS = {
    "Function": lambda m, h: exp_saving_its_output(m).apply(h),
    "exp": lambda m, h: h.exp(),
}


def _input_outlives(m: Any, op: str, hooks: str) -> tuple:
    """Whether the input ``h`` of ``op`` outlives its names with the collector off, and the
    gradient a backward through the packed output gives."""
    x = m.arange(1.0, 5.0, dtype=m.float64).requires_grad_()
    enabled = gc.isenabled()
    gc.disable()
    try:
        h = x * 2
        with _HOOKS[hooks](m):
            y = _OPS[op](m, h)
        y.sum().backward(retain_graph=True)
        kept = weakref.ref(h)
        del y, h
        return kept() is not None, x.grad
    finally:
        if enabled:
            gc.enable()


@pytest.mark.parametrize("hooks", sorted(_HOOKS))
@pytest.mark.parametrize("op", ["Function", "exp"])
def test_input_of_a_node_whose_output_is_packed_dies_with_its_names(
    spec: str, op: str, hooks: str
) -> None:
    same(lambda m: _input_outlives(m, op, hooks), spec)
