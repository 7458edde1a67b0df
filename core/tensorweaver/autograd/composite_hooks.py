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
