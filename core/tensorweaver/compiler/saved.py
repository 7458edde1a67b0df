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

The Function's own outputs are other tensors than the eager ones, so the same goes for an
output whose eager node saved it (``exp``, ``sigmoid``, ``softmax``: PyTorch's nodes that
save their result), or saved the tensor it views: the replay saves it in its ctx, whose
version check raises as eagerly, and its recorded backward reads the output's array as
it is at backward (a write through ``.data`` reaches it, as the eager node's rule).
"""

from __future__ import annotations

from typing import Any, Callable

from tensorweaver.autograd.function import _SavedOutput
from tensorweaver.autograd.gradients import READS_INPUT
from tensorweaver.autograd.node import Node, _saves_output
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
    # (not a shape, nor a tensor saved_tensors_hooks packed: PyTorch checks no version of it)
    return [
        t
        for i, t in enumerate(node.inputs)
        if isinstance(t, Tensor) and (reads is None or reads(node, i))
    ]


def saved_outputs(outputs: list[Tensor]) -> list[int]:
    """The positions in ``outputs`` of the tensors that their eager node saved for backward,
    or whose write reaches a tensor its node saved (the base of a view)."""
    return [i for i, t in enumerate(outputs) if _saved_by_its_node(t)]


def _saved_by_its_node(t: Tensor) -> bool:
    while t is not None:
        node = t._node
        if type(node) is Node and (_saves_output(node) or _function_saves_output(node)):
            return True
        view = t._view_of
        t = view[0] if view is not None else None
    return False


def _function_saves_output(node: Node) -> bool:
    """Whether ``node`` is a custom Function's output that its ctx saved (and checks)."""
    if node.op != "function":
        return False
    ctx, index = node.saved[1], node.saved[3]
    return any(type(s) is _SavedOutput and s.index == index for s in ctx._saved)
