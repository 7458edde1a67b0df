"""Which tensors at a step's locations a compiled forward's eager graph saved for backward.

A replayed forward runs no autograd nodes, so nothing would notice a tensor the forward
read being changed in place before ``backward()``: the recorded backward would give the
gradient of the forward-time values. Eagerly, each node checks the versions of the inputs
its rule reads (and a custom Function those it saved) and raises PyTorch's "modified by an
inplace operation" error. The trace ran the forward eagerly, so its graph tells which
watched tensors eager would check: an input a node reads, or a view or alias of one (its
base, what it was detached from). The replay keeps those tensors' versions in its
Function's ctx and checks them when its backward runs (differentiable.py); an addend,
which no rule reads, stays free.
"""

from __future__ import annotations

from typing import Any, Callable

from tensorweaver.autograd.gradients import READS_INPUT
from tensorweaver.autograd.node import InputShape, Node
from tensorweaver.tensor import Tensor


def saved_inputs(outputs: list[Tensor], watched: dict[int, Callable]) -> list[Callable]:
    """The getters (of ``watched``: id(tensor) -> getter) of the tensors that the graph of
    ``outputs`` checks on backward, in the order first met."""
    found: dict[int, Callable] = {}
    seen: set[int] = set()
    stack = [t._node for t in outputs if type(t._node) is Node]
    while stack:
        node = stack.pop()
        if id(node) in seen or node.parents is None:
            continue
        seen.add(id(node))
        for t in _checked(node):
            while t is not None:  # (it, then the tensors whose writes reach it)
                if id(t) in watched:
                    found.setdefault(id(t), watched[id(t)])
                if t._own_counter:
                    break  # (a ``.data`` alias: its base's writes leave its version alone)
                view = t._view_of
                t = view[0] if view is not None else t._alias_of
        stack.extend(p for p in node.parents if type(p) is Node)
    return list(found.values())


def _checked(node: Node) -> list[Any]:
    """The tensors whose versions ``node``'s backward checks, as the engine and a custom
    Function's ``saved_tensors`` do."""
    if node.op == "function":
        return [t for t in node.saved[1]._saved if isinstance(t, Tensor)]
    reads = READS_INPUT.get(node.op)
    return [
        t
        for i, t in enumerate(node.inputs)
        if type(t) is not InputShape and (reads is None or reads(node, i))
    ]
