"""What ``Tensor.grad_fn`` returns: PyTorch's face of a graph node.

PyTorch hands out one object per node whose class is named after the op
(``type(y.grad_fn).__name__ == "MulBackward0"``), with ``name()``, ``next_functions`` (the
producers of the node's inputs, leaves as ``AccumulateGrad``) and a ``metadata`` dict. Graph
printers (torchviz and the like) walk exactly that, so the core gives the same objects; the
node itself stays a plain slotted record that the engine reads without indirection.
"""

from __future__ import annotations

from typing import Any, Callable

_CLASSES: dict[str, type] = {}


class GradFn:
    """A graph node as PyTorch's ``grad_fn`` object; its class is named after the op."""

    __slots__ = ("_node", "metadata", "__weakref__")

    def __init__(self, node: Any) -> None:
        self._node = node
        self.metadata: dict = {}

    def name(self) -> str:
        return self._node.name

    @property
    def next_functions(self) -> tuple:
        """``(function, 0)`` per input: its producer's grad_fn, ``AccumulateGrad`` for a leaf
        that requires grad, None for an input that needs no gradient; empty once backward
        has freed the graph."""
        node = self._node
        if node.parents is None:
            return ()
        functions = [(_function_of(p), 0) for p in node.parents]
        if node.op == "fused" and node.saved[4] is not None:  # absent optional arguments
            found = iter(functions)
            functions = [next(found) if present else (None, 0) for present in node.saved[4]]
        return tuple(functions)

    def register_prehook(self, fn: Callable) -> Any:
        """Call ``fn(grad_outputs)`` before this node's backward runs; a tuple it returns
        replaces ``grad_outputs``. Returns a handle whose ``remove()`` unregisters it."""
        from tensorweaver.autograd.hooks import register_node_hook

        return register_node_hook(self._node, fn, prehook=True)

    def register_hook(self, fn: Callable) -> Any:
        """Call ``fn(grad_inputs, grad_outputs)`` after this node's backward ran (one
        gradient per input, None where it needs none); a tuple it returns replaces
        ``grad_inputs``. Returns a handle whose ``remove()`` unregisters it."""
        from tensorweaver.autograd.hooks import register_node_hook

        return register_node_hook(self._node, fn, prehook=False)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"


class AccumulateGrad:
    """The end of a path in the graph: where a leaf's gradient is accumulated into ``.grad``."""

    __slots__ = ("variable", "metadata")

    def __init__(self, variable: Any) -> None:
        self.variable = variable
        self.metadata: dict = {}

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    @property
    def next_functions(self) -> tuple:
        return ()

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


def grad_fn_of(node: Any) -> GradFn:
    """The one ``grad_fn`` object of ``node`` (made on first use, kept on the node)."""
    view = node.view
    if view is None:
        name = node.name
        cls = _CLASSES.get(name)
        if cls is None:
            cls = _CLASSES[name] = type(name, (GradFn,), {"__slots__": ()})
        view = node.view = cls(node)
    return view


def _function_of(parent: Any) -> Any:
    if parent is None:
        return None
    if hasattr(parent, "parents"):  # a node
        return grad_fn_of(parent)
    return AccumulateGrad(parent)  # a leaf tensor
