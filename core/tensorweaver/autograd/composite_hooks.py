"""Node hooks on a composite op: ``grad_fn.register_hook`` where PyTorch's one node is a
sub-graph here (gelu, silu, mean, mse_loss, ... named by ``ops.apply.labelled``).

PyTorch's hook sees the gradient of the op's output and what its node computed for each of
the op's inputs, and what it returns replaces those. Here the engine runs the composite's
nodes as one step (``engine._composite_pass``): from its last node down to the edges
``labelled`` recorded for the inputs, gathering what reaches each edge, which the hooks then
see and may replace before it goes on. A composite whose sub-graph reaches a leaf it was not
given as an input (an operand PyTorch's node has but ``labelled`` was not told of), or that
was given one tensor as two inputs (whose two gradients merge here), is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable

from tensorweaver.autograd.hooks import RemovableHandle, _add
from tensorweaver.autograd.node import Node

#: id(node) -> {handle id: hook(grad_inputs, grad_outputs) -> grad_inputs or None}: the
#: hooks of a composite's last node, which see the composite's inputs' gradients.
COMPOSITE_POSTHOOKS: dict[int, dict[int, Callable]] = {}


def graph_order(node: Node, depends_on: Callable[[Node], Iterable[Node]]) -> list[Node]:
    """The nodes reached from ``node`` through ``depends_on`` (a node's nodes it needs), each
    after those it depends on: depth first, without recursion (a graph may be deep)."""
    order: list[Node] = []
    seen: set[int] = set()
    stack: list[Any] = [node]  # a node to expand, or (node,) to place once expanded
    while stack:
        item = stack.pop()
        if type(item) is tuple:
            order.append(item[0])
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        stack.append((item,))
        stack.extend(p for p in depends_on(item) if id(p) not in seen)
    return order


class _NotOneStep(Exception):
    """Why a composite's nodes cannot be run as one step (found while walking them)."""


def inner_nodes(node: Node) -> Any:
    """The nodes of the composite that ``node`` ends, each before those it depends on (as
    the engine runs them), or the reason it cannot be run as one step (a string)."""
    edges = getattr(node, "edges", None)
    if edges is None:
        return "its nodes here do not record where the op's inputs were"
    stop = {id(e) for e in edges if e is not None}
    if len(stop) != sum(e is not None for e in edges):
        return "one tensor is two of its inputs here, whose gradients merge"

    def inside(item: Node) -> list[Node]:
        if item.parents is None:
            raise _NotOneStep("backward has freed its nodes")
        found = []
        for parent in item.parents:
            if parent is None or id(parent) in stop:
                continue
            if type(parent) is not Node:
                raise _NotOneStep(
                    "its nodes here reach a tensor that is not one of the op's inputs"
                )
            found.append(parent)
        return found

    try:
        order = graph_order(node, inside)
    except _NotOneStep as why:
        return str(why)
    order.reverse()
    return order


def register_composite_hook(node: Node, hook: Callable) -> RemovableHandle:
    """Register ``hook`` on the composite ``node`` ends (checked: :func:`inner_nodes`)."""
    return _add(COMPOSITE_POSTHOOKS, node, hook)


def log_probability_hook(node: Node, hook: Callable) -> Callable:
    """``hook`` on a fused cross-entropy ``node`` as on PyTorch's node for it, the nll step
    of ``log_softmax``'s output: it sees the gradient of the log-probabilities (viewed as
    images where the logits are not 2-D or 4-D, as PyTorch's), and what it returns goes on
    through log_softmax to the logits. The fused kernel computes the logits' gradient at
    once, so the log-probabilities' is recomputed here, only where such a hook is set (from
    the logits themselves under create_graph, so that the result keeps its graph)."""
    from tensorweaver.autograd.engine import grad
    from tensorweaver.autograd.hooks import _replaced
    from tensorweaver.autograd.mode import enable_grad, is_grad_enabled
    from tensorweaver.nn.functional import log_softmax, nll_loss

    def on_log_probabilities(grad_inputs: tuple, grad_outputs: tuple) -> tuple | None:
        x, target = node.inputs
        shown = (*x.shape[:2], 1, -1) if x.dim() not in (2, 4) else x.shape
        if getattr(node, "edges", None) is not None:  # (an unbatched input's: loss.py)
            shown = x.shape[1:]
        create_graph = is_grad_enabled()
        with enable_grad():
            logits = x if create_graph else x.detach().requires_grad_()
            logp = log_softmax(logits, 1)
            plain = logp.detach().reshape(shown).requires_grad_()
            classes = 1 if plain.dim() > 1 else 0  # (the class axis: none left out)
            labels = target.reshape(plain.shape[:classes] + plain.shape[classes + 1 :])
            loss = nll_loss(plain, labels, ignore_index=node.saved[3][0])
            seen = grad(loss, plain, grad_outputs[0], create_graph=create_graph)
        returned = hook(seen, grad_outputs)
        if returned is None:
            return None
        (replaced,) = _replaced(hook, returned, seen)
        if replaced is None:
            return (None, grad_inputs[1])
        on = grad(logp, logits, replaced.reshape(x.shape), create_graph=create_graph)
        return (on[0], grad_inputs[1])

    return on_log_probabilities


def view_hook(node: Node, hook: Callable, shape: tuple) -> Callable:
    """``hook`` on a fused ``node`` whose PyTorch node is a view of its result, of ``shape``
    (instance norm's batch norm of the input as one sample), as on that view's
    node: it sees the output's gradient in ``shape``, and what it returns goes back through
    the fused rule in its place (run again only then)."""
    from tensorweaver.autograd.gradients import GRADIENTS
    from tensorweaver.autograd.hooks import _replaced

    def on_the_view(grad_inputs: tuple, grad_outputs: tuple) -> tuple | None:
        g = grad_outputs[0]
        seen = (g.reshape(shape),)
        returned = hook(seen, grad_outputs)
        if returned is None:
            return None
        (replaced,) = _replaced(hook, returned, seen)
        if replaced is None:
            return tuple(None for _ in grad_inputs)
        again = GRADIENTS[node.op](node, replaced.reshape(g.shape))
        return tuple(None if old is None else new for old, new in zip(grad_inputs, again))

    return on_the_view
