"""A node of the autograd graph: how one tensor was made from others.

A node holds its op's name (the key into :data:`tensorweaver.autograd.gradients.GRADIENTS`),
the input tensors, where each input's gradient goes (``parents``: the input's producer node,
the input itself when it is a leaf that requires grad, or None) and whatever the rule needs.
It never holds its output tensor, so a tensor and its node never keep each other alive; a
rule that needs the output rebuilds it from the saved array (:meth:`Node.output`).
"""

from __future__ import annotations

from typing import Any

from tensorweaver.autograd.names import BY_OPERANDS, grad_fn_name

#: How many in-place changes the process has made (one slot, so it can be bumped in place).
#: A node made after the last one needs no version check in backward.
INPLACE_CHANGES = [0]

#: Ops whose gradient rules (``autograd/gradients.py``) read no input's value, only its
#: shape, dtype or backend. Their nodes keep an :class:`InputShape` in place of each input,
#: so an intermediate is freed as soon as the forward pass is done with it: a network's
#: residual sums and pre-activation outputs would otherwise stay alive until backward (as
#: in PyTorch, whose AddBackward and ReluBackward keep no input either). Nor can a later
#: in-place change of such an input trip the version check: the rule never reads it.
SHAPE_ONLY_OPS = frozenset(
    {
        "add", "sub", "neg", "relu", "identity", "sum", "cast", "to_device",
        "reshape", "permute", "expand", "slice", "pad", "flip", "cat",
        "take", "gather", "scatter", "scatter_add",
    }
)  # fmt: skip


#: Labels of a ``div`` by the element count that ends a mean (ops/reduce.py).
_MEAN_LABELS = ("MeanBackward0", "MeanBackward1")
_PLAIN = frozenset({int, float, bool, str, type(None)})


def _no_data(saved: Any) -> bool:
    """Whether ``saved`` holds only Python numbers and strings (shapes, axes, flags)."""
    # Exact types and a plain loop: this runs for every node that backward frees.
    if type(saved) in _PLAIN:
        return True
    if not isinstance(saved, (tuple, list)):
        return False
    for s in saved:
        if type(s) not in _PLAIN and not _no_data(s):
            return False
    return True


class InputShape:
    """What backward needs of an input whose value its rule never reads."""

    __slots__ = ("shape", "dtype", "backend", "_version")

    def __init__(self, t: Any) -> None:
        self.shape, self.dtype, self.backend = t.shape, t.dtype, t.backend
        self._version = t._version  # as recorded: nothing this rule reads can change


class Slot:
    """The gradient ``g`` of output ``index`` of a node with ``count`` differentiable outputs.

    Such a node (one call of a whole linalg function: eigh's eigenvalues and eigenvectors)
    is the one parent of a node per output, whose rule hands its gradient on as a Slot; the
    engine gathers the Slots into one tuple (None for an unused output), so the node's rule
    runs once for all its outputs.
    """

    __slots__ = ("index", "count", "g")

    def __init__(self, index: int, count: int, g: Any) -> None:
        self.index, self.count, self.g = index, count, g


def gathered(slots: list) -> tuple:
    """The gradient of each output (one ``Slot`` per output node), None where none came."""
    grads: list = [None] * slots[0].count
    for slot in slots:
        grads[slot.index] = slot.g
    return tuple(grads)


class Node:
    __slots__ = (
        "op", "inputs", "parents", "versions", "epoch", "saved", "retained", "label", "view",
        "__weakref__",
    )  # fmt: skip

    def __init__(self, op: str, inputs: tuple, saved: Any) -> None:
        self.op = op
        self.inputs = inputs
        # Plain loops: generator expressions cost three times as much for two inputs.
        parents = []
        versions = []
        for t in inputs:
            node = t._node
            parents.append(node if node is not None else (t if t.requires_grad else None))
            versions.append(t._version)
        self.parents = tuple(parents)
        self.versions = tuple(versions)
        if op in SHAPE_ONLY_OPS:
            self.inputs = tuple([InputShape(t) for t in inputs])
        self.epoch = INPLACE_CHANGES[0]
        self.saved = saved
        self.retained = None  # a weak reference to the output, set by Tensor.retain_grad()
        self.label = None  # PyTorch's grad_fn name for the composite op this node ends
        self.view = None  # its grad_fn object (autograd/grad_fn.py), made when first asked for

    @property
    def name(self) -> str:
        """PyTorch's name for this node as a ``grad_fn`` (``MulBackward0``)."""
        return grad_fn_name(self)

    def output(self, native: Any) -> Any:
        """The output tensor, rebuilt around its saved array, still attached to this node."""
        from tensorweaver.tensor import Tensor

        first = self.inputs[0]
        out = Tensor(native, first.backend, first.dtype)
        out._node = self
        out.requires_grad = True
        return out

    def release(self) -> None:
        """Drop what backward saved; a later backward through here is an error, unless the
        node saved no tensor (as PyTorch frees saved tensors only: ``(x + 1).sum()`` and
        ``x.mean()`` can run backward twice, ``x.exp()`` and ``x * 2`` cannot)."""
        if self.op in SHAPE_ONLY_OPS and _no_data(self.saved):
            return  # its inputs are InputShapes already: nothing to free (its name needs them)
        if self.label is None and self.op in BY_OPERANDS:  # its name needs the operands
            self.label = grad_fn_name(self)
        if self.label in _MEAN_LABELS and self.op == "div" and self.parents[1] is None:
            # PyTorch's MeanBackward keeps the count, not the sum: keep the 0-d divisor.
            self.inputs = (InputShape(self.inputs[0]), self.inputs[1])
            return
        saved, self.inputs, self.parents, self.saved = self.saved, None, None, None
        if self.op == "function":  # an autograd.Function: its ctx's saved tensors go too
            saved[1]._release()

    def __repr__(self) -> str:
        return f"<{self.name}>"
