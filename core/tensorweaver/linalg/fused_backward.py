"""The gradient rules of the nodes :mod:`tensorweaver.linalg.fused` records (merged into
``GRADIENTS`` by ``autograd/linalg_rules.py``): the backend's own backward of the whole
function, or under ``create_graph`` the core's decomposition differentiated again."""

from __future__ import annotations

from typing import Any

from tensorweaver.autograd.mode import enable_grad, is_grad_enabled
from tensorweaver.autograd.node import Slot
from tensorweaver.tensor import Tensor


def function_backward(node: Any, g: Tensor) -> tuple:
    """A ``linalg_function`` node: the inputs' gradients from that of output ``i``."""
    saved, i, reference, static = node.saved
    if is_grad_enabled():
        return _through_reference(node.inputs, reference, static, (i,), (g,))
    inputs = node.inputs
    # Plain loops: this runs once per call in every backward pass.
    needs = tuple([p is not None for p in node.parents])
    backend = inputs[0].backend
    return _wrapped(backend.fused_linalg_backward((saved, i), g.native, needs), inputs)


def outputs_backward(node: Any, grads: tuple) -> tuple:
    """A ``linalg_outputs`` node: the inputs' gradients from those of its differentiable
    outputs (``grads``, gathered by the engine, None for an output without one)."""
    saved, indices, reference, static = node.saved
    if is_grad_enabled():
        return _through_reference(node.inputs, reference, static, indices, grads)
    inputs = node.inputs
    needs = tuple([p is not None for p in node.parents])
    natives = tuple([None if g is None else g.native for g in grads])
    backend = inputs[0].backend
    return _wrapped(backend.fused_linalg_outputs_backward((saved, indices), natives, needs), inputs)


def output_backward(node: Any, g: Tensor) -> tuple:
    """A ``linalg_output`` node: its gradient, handed on to its call's node."""
    slot, count = node.saved
    return (Slot(slot, count, g),)


def _wrapped(natives: Any, inputs: tuple) -> tuple:
    backend = inputs[0].backend
    grads = []
    for n, t in zip(natives, inputs):
        grads.append(None if n is None else Tensor(n, backend, t.dtype))
    return tuple(grads)


def _through_reference(
    inputs: tuple, reference: Any, static: tuple, indices: tuple, grads: tuple
) -> tuple:
    """The gradients of the core's decomposition (recording a graph: double backward)."""
    from tensorweaver.autograd.engine import grad

    wanted = [t for t in inputs if t.requires_grad]
    with enable_grad():
        ys = reference(*inputs, *static)
    outs, given = [], []
    for i, g in zip(indices, grads):
        if g is not None:
            outs.append(ys[i])
            given.append(g)
    found = iter(grad(outs, wanted, given, create_graph=True, allow_unused=True))
    return tuple([next(found) if t.requires_grad else None for t in inputs])
