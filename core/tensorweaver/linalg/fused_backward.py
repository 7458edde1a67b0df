"""The gradient rules of the nodes :mod:`tensorweaver.linalg.fused` records (merged into
``GRADIENTS`` by ``autograd/linalg_rules.py``): the backend's own backward of the whole
function, or under ``create_graph`` the function's own formula on its outputs (where it has
one), else the core's decomposition differentiated again."""

from __future__ import annotations

import weakref
from typing import Any, Callable

from tensorweaver.autograd.mode import enable_grad, is_grad_enabled
from tensorweaver.autograd.node import PACKED, InputShape, Node, Slot
from tensorweaver.tensor import Tensor

#: A function's gradient formula: (inputs, differentiable outputs, their gradients, None
#: for an unused one) -> one gradient per input.
Rule = Callable[[tuple, tuple, tuple], tuple]


class Attached:
    """What a call's ``Rule`` needs under ``create_graph``: its differentiable outputs
    (numbered ``indices`` among the call's outputs) as arrays and dtypes, and weak
    references to the nodes they hang from (set once made; the nodes hold this object)."""

    __slots__ = ("rule", "indices", "natives", "dtypes", "nodes")

    def __init__(self, rule: Rule, indices: tuple, outs: tuple) -> None:
        self.rule, self.indices = rule, indices
        self.natives = tuple([outs[i].native for i in indices])
        self.dtypes = tuple([outs[i].dtype for i in indices])
        self.nodes: tuple = ()

    def outputs(self, node: Node) -> tuple | None:
        """The outputs as tensors attached to their nodes again (``node`` is the call's node
        whose rule runs), so that a second backward sums their gradients with those of the
        outputs' other uses; None where a node was released (its graph was not retained)."""
        backend = node.inputs[0].backend
        outs = []
        for k, (ref, native, dtype) in enumerate(zip(self.nodes, self.natives, self.dtypes)):
            out = Tensor(native, backend, dtype)
            hung = ref()
            if hung is None:  # an output the program dropped, and its node with it
                hung = self._remade(node, k, out)
            elif hung.parents is None:
                return None
            out._node = hung
            out._requires_grad = True
            outs.append(out)
        return tuple(outs)

    def _remade(self, node: Node, k: int, out: Tensor) -> Node:
        """A node for dropped output ``k``, as :func:`tensorweaver.linalg.fused._record`
        made it, kept (weakly) for the next rebuild: one node per output, so that the
        engine's gradients of the output are summed there."""
        if node.op == "linalg_outputs":
            made = Node("linalg_output", (), (k, len(self.indices)))
            shape = InputShape(out)
            made.inputs, made.parents, made.versions = (shape,), (node,), (shape._version,)
        else:
            saved = node.saved
            made = Node("linalg_function", node.inputs, (saved[0], self.indices[k], *saved[2:]))
        made.label = node.label
        nodes = list(self.nodes)
        nodes[k] = weakref.ref(made)
        self.nodes = tuple(nodes)
        return made


def function_backward(node: Any, g: Tensor) -> tuple:
    """A ``linalg_function`` node: the inputs' gradients from that of output ``i``."""
    saved, i, reference, static, attached, given = node.saved
    if is_grad_enabled():
        return _again(node, (reference, static, attached), (i,), (g,))
    inputs = node.inputs
    parents = node.parents
    backend = inputs[0].backend
    undo: tuple = ()
    if len(inputs) == 2:  # most functions with two inputs (the solves): no loops
        first, second = inputs
        # (an input's array replaced through .data since the call: the record reads it)
        if (type(first) is Tensor and first.native is not given[0]) or (
            type(second) is Tensor and second.native is not given[1]
        ):
            undo = rebound(node, given, saved, backend)
        needs: tuple = (parents[0] is not None, parents[1] is not None)
        try:
            ga, gb = backend.fused_linalg_backward((saved, i), g.native, needs)
        finally:
            restored(undo)
        return (
            None if ga is None else Tensor(ga, backend, first.dtype),
            None if gb is None else Tensor(gb, backend, second.dtype),
        )
    if len(inputs) == 1:  # one input (det, inv, cholesky, matrix_exp): no loops either
        first = inputs[0]
        if type(first) is Tensor and first.native is not given[0]:
            undo = rebound(node, given, saved, backend)
        try:
            (ga,) = backend.fused_linalg_backward((saved, i), g.native, (parents[0] is not None,))
        finally:
            restored(undo)
        return (None if ga is None else Tensor(ga, backend, inputs[0].dtype),)
    # Plain loops: this runs once per call in every backward pass.
    undo = rebound(node, given, saved, backend)
    needs = tuple([p is not None for p in parents])
    try:
        return _wrapped(backend.fused_linalg_backward((saved, i), g.native, needs), inputs)
    finally:
        restored(undo)


def outputs_backward(node: Any, grads: tuple) -> tuple:
    """A ``linalg_outputs`` node: the inputs' gradients from those of its differentiable
    outputs (``grads``, gathered by the engine, None for an output without one)."""
    saved, indices, reference, static, attached, given = node.saved
    if is_grad_enabled():
        return _again(node, (reference, static, attached), indices, grads)
    inputs = node.inputs
    needs = tuple([p is not None for p in node.parents])
    natives = tuple([None if g is None else g.native for g in grads])
    backend = inputs[0].backend
    undo = rebound(node, given, saved, backend)
    try:
        grads = backend.fused_linalg_outputs_backward((saved, indices), natives, needs)
    finally:
        restored(undo)
    return _wrapped(grads, inputs)


def output_backward(node: Any, g: Tensor) -> tuple:
    """A ``linalg_output`` node: its gradient, handed on to its call's node."""
    slot, count = node.saved
    return (Slot(slot, count, g),)


def rebound(node: Any, given: tuple, saved: Any, backend: Any, inputs: tuple = ()) -> tuple:
    """Have the backend's record ``saved`` of ``node``'s call read each input's array as it
    is now (``node.inputs``, else ``inputs``) where a write through ``.data`` replaced the
    one ``given`` to the call (the optional ``rebind_linalg_input``, API 2.13), as PyTorch's
    node reads the tensor it saved, whose memory that write changed. (A change in place
    that autograd sees was refused before.) Not where saved_tensors_hooks packed the
    inputs: they are then what unpack gave, and the record's leaf of an array may serve
    other calls. Returns what puts the record back, for :func:`restored` once this backward
    has read it: the record's leaf of an array may serve other calls on it (a detached
    alias's), which must go on reading that array."""
    rebind = getattr(backend, "rebind_linalg_input", None)
    if rebind is None or (PACKED and id(node) in PACKED):
        return ()
    undo = []
    for j, (t, native) in enumerate(zip(inputs or node.inputs, given)):
        if type(t) is Tensor and t.native is not native:
            back = rebind((saved, j), t.native)
            if back is not None:
                undo.append(back)
    return tuple(undo)


def restored(undo: tuple) -> None:
    """Run what :func:`rebound` returned: the records read their inputs as given again."""
    for back in undo:
        back()


def _wrapped(natives: Any, inputs: tuple) -> tuple:
    backend = inputs[0].backend
    grads = []
    for n, t in zip(natives, inputs):
        grads.append(None if n is None else Tensor(n, backend, t.dtype))
    return tuple(grads)


def _again(node: Node, call: tuple, indices: tuple, grads: tuple) -> tuple:
    """The gradients under ``create_graph``, from ``grads``, those of the outputs numbered
    ``indices``; ``call`` is (reference, static, attached)."""
    reference, static, attached = call
    if attached is None:
        factor = FROM_FACTOR.get(node.label)
        if factor is not None and node.parents is not None:  # (cholesky's: no Attached,
            # made every call, for a rule that runs under create_graph alone)
            first = node.inputs[0]
            out = Tensor(node.made[0], first.backend, first.dtype)
            out._node, out._requires_grad = node, True
            return (factor(out, grads[0], static[0]),)
        outs = None
    else:
        outs = attached.outputs(node)
    if outs is None:
        return _through_reference(node.inputs, reference, static, indices, grads)
    given = dict(zip(indices, grads))
    return attached.rule(node.inputs, outs, tuple([given.get(i) for i in attached.indices]))


def _from_factor(factor: Tensor, g: Tensor, upper: bool) -> Tensor:
    """cholesky's gradient under ``create_graph``: PyTorch's cholesky_backward on the call's
    own factor (L, or U with ``upper``: on L = U^H, gL = gU^H), attached to its node again,
    not A's decomposition recomputed: a write through the factor's ``.data`` reaches it and
    one through A's does not, as PyTorch's node reads its result alone."""
    from tensorweaver.autograd.linalg_rules import cholesky_gradient  # (it imports this)
    from tensorweaver.linalg._shared import mH

    if upper:
        return cholesky_gradient(mH(factor), mH(g))
    return cholesky_gradient(factor, g)


#: The labels of the whole calls whose create_graph gradient is :func:`_from_factor` (the
#: backend's whole cholesky/cholesky_ex, and torch.cholesky's), read only under create_graph.
FROM_FACTOR = {"LinalgCholeskyExBackward0": _from_factor, "CholeskyBackward0": _from_factor}


def _through_reference(
    inputs: tuple, reference: Any, static: tuple, indices: tuple, grads: tuple
) -> tuple:
    """The gradients of the core's decomposition (recording a graph: double backward)."""
    from tensorweaver.autograd.engine import grad

    with enable_grad():
        # Each input that needs a gradient through an alias of its own, the gradient taken
        # at the aliases: where one input depends on another (solve(x, f(x))), a gradient
        # taken at the inputs themselves would follow f back into x, and the engine then
        # adds that part into x again (counted twice)
        fed = tuple([t.view_as(t) if t.requires_grad else t for t in inputs])
        ys = reference(*fed, *static)
    wanted = [f for f, t in zip(fed, inputs) if t.requires_grad]
    outs, given = [], []
    for i, g in zip(indices, grads):
        if g is not None:
            outs.append(ys[i])
            given.append(g)
    found = iter(grad(outs, wanted, given, create_graph=True, allow_unused=True))
    return tuple([next(found) if t.requires_grad else None for t in inputs])
