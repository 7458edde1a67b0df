"""Reverse-mode differentiation over the recorded graph.

Nodes are visited once, in reverse topological order, each when every gradient flowing into
it has been summed. Each input's gradient is brought back to that input's shape and dtype
here (the one place that un-broadcasts). Without ``retain_graph`` each node drops what it
saved as soon as its rule has run, so memory is freed while backward proceeds.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Callable

from tensorweaver.autograd.anomaly import MODE as ANOMALY
from tensorweaver.autograd.anomaly import check_nan, report_forward_stack
from tensorweaver.autograd.composite_hooks import COMPOSITE_POSTHOOKS, inner_nodes
from tensorweaver.autograd.function import check_view_output
from tensorweaver.autograd.grad_fn import shown_inputs
from tensorweaver.autograd.gradients import GRADIENTS, READS_INPUT
from tensorweaver.autograd.graph import (
    MULTI_GRAD_HOOKS,
    PACKED,
    PACKED_OPERANDS,
    PASS_FRAMES,
    pass_ended,
    unpack_operands,
    unpacked,
)
from tensorweaver.autograd.hooks import (
    GRAD_HOOKS,
    NODE_POSTHOOKS,
    NODE_PREHOOKS,
    POST_ACCUMULATE_HOOKS,
    run_hooks,
    run_node_posthooks,
    run_node_prehooks,
)
from tensorweaver.autograd.mode import _restore, _switched, enable_grad, set_grad_enabled
from tensorweaver.autograd.node import (
    CHANGED_OUTPUTS,
    INPLACE_CHANGES,
    RESHAPED_OUTPUTS,
    SHAPES_BEFORE,
    STALE_VIEWS,
    Node,
    Slot,
    check_output_unchanged,
    gathered,
    output_shape_made,
    recorded_shape,
    regenerate_inputs,
)
from tensorweaver.memory_formats import contiguous_format
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.complex import gradient_as
from tensorweaver.ops.creation import zeros_like
from tensorweaver.ops.in_place_writes import add_scaled, addable
from tensorweaver.tensor import (
    _MADE_WITHOUT_GRAD,
    _SHARED_STORAGES,
    GRAD_DTYPES,
    Tensor,
    _laid_out_like,
    _out_of_order,
    _shaped,
)


def sum_to(g: Tensor, shape: tuple, node: Node | None = None) -> Tensor:
    """``g`` summed over the dimensions that broadcasting added or stretched to reach it
    from ``shape``; PyTorch's error where ``shape`` cannot be broadcast to ``g``'s (a
    gradient of ``node``'s for an input whose shape changed in place since it was used)."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    if lead < 0 or any(n != 1 and n != g.shape[i + lead] for i, n in enumerate(shape)):
        raise RuntimeError(
            f"Function {node.name if node is not None else 'backward'} returned an invalid "
            f"gradient - got {list(g.shape)} but expected shape compatible with {list(shape)} "
            "(a tensor whose shape changed in place, t_ or unsqueeze_ under no_grad, after "
            "the graph used it or made it: change the shape of a .clone() instead)"
        )
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and g.shape[i + lead] != 1
    )
    if axes:
        g = g.sum(axes, keepdim=True)
    return g.reshape(shape)


def _topological(roots: list[Node]) -> list[Node]:
    """Nodes reachable from ``roots``, each before every node it depends on."""
    order: list[Node] = []
    seen: set[Node] = set()
    stack: list[Any] = list(roots)  # a node to expand, or (node,) to emit once expanded
    while stack:
        node = stack.pop()
        if type(node) is tuple:
            order.append(node[0])
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node,))
        parents = node.parents
        if parents is None:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Specify retain_graph=True on "
                "the first backward() or autograd.grad() call if you need to do this."
            )
        for parent in parents:
            if type(parent) is Node and parent not in seen:
                stack.append(parent)
    order.reverse()
    return order


def _check_versions(node: Node) -> None:
    if CHANGED_OUTPUTS:
        check_output_unchanged(node)
    reads = READS_INPUT.get(node.op)
    for i, (t, version) in enumerate(zip(node.inputs, node.versions)):
        if t._version != version and (reads is None or reads(node, i)):
            _refuse_changed(node, t, version)
    for ref, version in getattr(node, "operands", ()):  # (a loss's inputs its node saves)
        t = ref()
        if t is not None and t._version != version:
            _refuse_changed(node, t, version)


def _refuse_changed(node: Node, t: Tensor, version: int) -> None:
    raise RuntimeError(
        f"one of the tensors needed for gradient computation has been modified by an "
        f"in-place operation: an input of {node.name} of shape {list(t.shape)} is at "
        f"version {t._version}, expected version {version}; use an out-of-place op "
        "(x = x + 1, not x += 1) or .clone() the tensor first"
    )


def _check_view_uses(node: Node, function: Node) -> None:
    """Refuse ``node``'s use of a Function's view output at a version it no longer has."""
    for parent, version in zip(node.parents, node.versions):
        if parent is function:
            check_view_output(function, version)


def _leading_to(order: list[Node], targets: Sequence[Tensor], wanted: dict) -> set[Node]:
    """The nodes of ``order`` behind which a target lies (a target leaf among their parents,
    or a node that is a target or leads to one): the only ones a pass for ``targets`` runs,
    as PyTorch's engine runs only those (a node it skips is not checked for in-place
    changes, and keeps what it saved)."""
    leaf_ids = {id(t) for t in targets if t._node is None}
    leading: set[Node] = set()
    for node in reversed(order):  # (each node after the nodes it depends on)
        for parent in node.parents:
            if type(parent) is Node:
                if parent in leading or parent in wanted:
                    leading.add(node)
                    break
            elif parent is not None and id(parent) in leaf_ids:
                leading.add(node)
                break
    return leading


class Piece:
    """The gradient of a slice along one axis: ``g`` placed at ``start`` in zeros of ``shape``.

    Kept unplaced until every gradient for that tensor has arrived, so that the pieces of a
    ``split``/``chunk``/``unbind`` are joined by one ``cat`` instead of each being padded to
    full size and summed (quadratic in the number of pieces).
    """

    __slots__ = ("g", "axis", "start", "shape")

    def __init__(self, g: Tensor, axis: int, start: int, shape: tuple) -> None:
        self.g, self.axis, self.start, self.shape = g, axis, start, shape

    def placed(self) -> Tensor:
        from tensorweaver.ops.movement import pad_dims

        widths = [(0, 0)] * len(self.shape)
        size = self.g.shape[self.axis]
        widths[self.axis] = (self.start, self.shape[self.axis] - self.start - size)
        return pad_dims(self.g, widths)


def _accumulate(table: dict, key: Any, g: Any) -> None:
    current = table.get(key)
    if current is None:
        table[key] = g
    elif type(current) is list:
        current.append(g)
    else:
        table[key] = [current, g]


def _total(entry: Any) -> Any:
    """The sum of the gradients gathered for one tensor (pieces joined first); for a node
    with several outputs, the tuple of their gradients."""
    if type(entry) is Piece:
        return entry.placed()
    if type(entry) is Slot:
        return gathered([entry])
    if type(entry) is not list:
        return entry
    if type(entry[0]) is Slot:
        return gathered(entry)
    total = None
    pieces = []
    for g in entry:
        if type(g) is Piece:
            pieces.append(g)
        else:
            total = g if total is None else total + g
    if pieces:
        joined = _join(pieces)
        total = joined if total is None else total + joined
    elif entry[0].is_sparse and all(g.is_sparse for g in entry):  # sparse ones: a sparse sum
        total = _sparse_sum(entry, total)
    return total


def _sparse_sum(parts: list, total: Tensor) -> Tensor:
    """``total``, the sum of the sparse gradients ``parts``, made one of them anew:
    uncoalesced where several were summed, with their entries summed as PyTorch's engine
    sums them (nn/functional/sparse.py ``carry_entries``)."""
    from tensorweaver.nn.functional.sparse import carry_entries  # (loaded: sparse gradients)

    out = _sparse_class(len(parts), parts[0])(total.native, total.backend, total.dtype)
    carry_entries(out, *parts)
    return out


def _sparse_class(count: int, first: Tensor) -> type:
    """The class of a sum of ``count`` sparse gradients, the first ``first``: uncoalesced
    where several were summed, as PyTorch's engine joins their entries without merging."""
    if count == 1:
        return type(first)
    from tensorweaver.nn.functional.sparse import SparseGradient  # (loaded: sparse gradients)

    return SparseGradient


def _join(pieces: list) -> Tensor:
    from tensorweaver.ops.creation import zeros_like_shape
    from tensorweaver.ops.movement import cat

    axis, shape = pieces[0].axis, pieces[0].shape
    pieces = sorted(pieces, key=lambda p: p.start)
    parts, end = [], 0
    for p in pieces:
        if p.axis != axis or p.start < end:  # different axes or overlaps: place and add
            total = None
            for q in pieces:
                total = q.placed() if total is None else total + q.placed()
            return total
        if p.start > end:
            gap = list(shape)
            gap[axis] = p.start - end
            parts.append(zeros_like_shape(p.g, tuple(gap)))
        parts.append(p.g)
        end = p.start + p.g.shape[axis]
    if end < shape[axis]:
        gap = list(shape)
        gap[axis] = shape[axis] - end
        parts.append(zeros_like_shape(pieces[0].g, tuple(gap)))
    return cat(parts, axis) if len(parts) > 1 else parts[0]


def run(
    roots: Sequence[Tensor],
    grads: Sequence[Tensor],
    retain_graph: bool,
    create_graph: bool,
    targets: Sequence[Tensor] | None = None,
) -> dict:
    """Propagate ``grads`` from ``roots``. Without ``targets``, leaf gradients accumulate into
    ``.grad``; with them, the gradients of ``targets`` are returned in a dict by id."""
    if STALE_VIEWS:  # (a view a write missed starts or ends here with its rebuilt grad_fn)
        regenerate_inputs((*roots, *(targets or ())))
    node_grads: dict[Node, Any] = {}  # nodes hash by identity
    leaf_grads: dict[int, Any] = {}  # tensors by id: their == is elementwise
    leaves: dict[int, Tensor] = {}
    start: list[Node] = []
    for root, g in zip(roots, grads):
        if root._node is not None:
            if root._node.op == "function":
                check_view_output(root._node, root._version)
            _accumulate(node_grads, root._node, g)
            start.append(root._node)
        elif root.requires_grad:
            _accumulate(leaf_grads, id(root), g)
            leaves[id(root)] = root
    wanted_nodes = {t._node: t for t in targets if t._node is not None} if targets else None
    captured: dict[int, Tensor] = {}
    contexts: list = []  # the autograd.Function contexts whose saved tensors this pass frees
    tokens = _switched(create_graph)  # backward's grad mode: on only to create a graph
    frame = None
    if MULTI_GRAD_HOOKS[0]:  # (register_multi_grad_hook: what its tensors get in this pass)
        frame = {}
        PASS_FRAMES.append(frame)
    try:
        order = _topological(start)
        leading = _leading_to(order, targets, wanted_nodes) if targets else None
        needed = _needed(leading, wanted_nodes, targets) if targets else None
        _propagate(order, node_grads, leaf_grads, leaves, leading, wanted_nodes, needed,
                   captured, contexts, retain_graph, create_graph, None)  # fmt: skip
        for ctx in contexts:  # once every output's node this pass reaches has run
            ctx._release()
        # Leaf hooks run, and leaves accumulate, in backward's grad mode too.
        found = _finish(leaf_grads, leaves, targets, captured, create_graph)
        if frame:
            pass_ended(frame)
        return found
    finally:
        if frame is not None:
            PASS_FRAMES.pop()
        _restore(tokens)


def _propagate(
    order: list[Node],
    node_grads: dict,
    leaf_grads: dict,
    leaves: dict,
    leading: Any,
    wanted_nodes: Any,
    needed: Any,
    captured: dict,
    contexts: list,
    retain_graph: bool,
    create_graph: bool,
    whole: Any,
) -> None:
    """Run the nodes of ``order`` that gradients reach, each on the sum of its gradients,
    handing their inputs' gradients on in ``node_grads`` and ``leaf_grads``. ``needed``
    tells, where the pass has targets, whether a parent leads to one (:func:`_needed`: a
    node hook sees None for the others, as PyTorch computes none). ``whole`` is
    a composite's last node run by :func:`_composite_pass`: its own rule only, its tensor
    hooks and pre-hooks already run."""
    changes = INPLACE_CHANGES[0]
    detect = ANOMALY.enabled  # read once: off, anomaly mode costs one local test per node
    for node in order:
        g = node_grads.pop(node, None)
        if g is None:
            continue
        if leading is not None and node not in leading and node not in wanted_nodes:
            continue  # no target at or behind it: PyTorch neither runs it nor its hooks
        if type(g) is not Tensor:
            g = _total(g)
        if GRAD_HOOKS and id(node) in GRAD_HOOKS and node is not whole:  # before retain_grad
            g = run_hooks(GRAD_HOOKS[id(node)], g)
        if wanted_nodes and node in wanted_nodes and node is not whole:
            captured[id(wanted_nodes[node])] = g
        if node.retained is not None and node is not whole:  # autograd.grad() fills it too
            retained = node.retained()
            if retained is not None:  # as PyTorch's retain_grad hook: a copy, then sums,
                # stored unchecked (an in-place shape change, t_, leaves it on the old node)
                held = retained._grad
                retained._grad = _retained_first(g) if held is None else held + g
        if leading is not None and node not in leading:
            continue  # a target, with none behind it: not run (nor checked), as PyTorch's
        try:
            if node.epoch != changes:  # something changed in place since it was recorded
                _check_versions(node)
            if NODE_PREHOOKS or NODE_POSTHOOKS or PACKED or COMPOSITE_POSTHOOKS:
                if node is whole:  # (its pre-hooks ran; its hooks see the whole composite)
                    input_grads = _rule(node, g)
                elif COMPOSITE_POSTHOOKS and id(node) in COMPOSITE_POSTHOOKS:
                    _composite_pass(node, g, node_grads, leaf_grads, leaves, leading,
                                    wanted_nodes, needed, captured, contexts, retain_graph,
                                    create_graph)  # fmt: skip
                    continue
                else:
                    g, input_grads = _hooked(node, g, needed)
            else:
                input_grads = GRADIENTS[node.op](node, g)
            if detect:
                check_nan(node, input_grads)
        except Exception:
            if detect:
                report_forward_stack(node)
            raise
        for t, parent, gi in zip(node.inputs, node.parents, input_grads):
            if parent is None or gi is None:
                continue
            # A Piece already has the input's dtype, placed when all gradients are in; a
            # Slot is one output's gradient, for its node's rule.
            kind = type(gi)
            if kind is not Piece and kind is not Slot:
                # (PyTorch's check: into the shape the parent's producer made its output in,
                # where that output's shape changed in place since; else the input's shape)
                made = None
                if RESHAPED_OUTPUTS and id(parent) in RESHAPED_OUTPUTS:
                    made = output_shape_made(parent)
                if made is not None:
                    if gi.shape != made:
                        gi = sum_to(gi, made, node)
                elif gi.shape != t.shape:
                    gi = sum_to(gi, recorded_shape(t, node) if SHAPES_BEFORE else t.shape, node)
                if gi.dtype is not t.dtype:
                    gi = gradient_as(gi, t.dtype)
            if type(parent) is Node:
                # (a Function's view output changed since: refused)
                if parent.op == "function" and parent.saved[1]._view_versions:
                    _check_view_uses(node, parent)
                table, key = node_grads, parent
            else:
                table, key = leaf_grads, id(parent)
                leaves[key] = parent
            # _accumulate, inlined: this loop runs once per edge of the graph.
            current = table.get(key)
            if current is None:
                table[key] = gi
            elif type(current) is list:
                current.append(gi)
            else:
                table[key] = [current, gi]
        if not retain_graph:
            node.release()
            if node.op == "function":
                contexts.append(node.saved[1])


def _composite_pass(
    node: Node,
    g: Tensor,
    node_grads: dict,
    leaf_grads: dict,
    leaves: dict,
    *rest: Any,
) -> None:
    """Run the composite that ``node`` ends as PyTorch's one node (autograd/composite_hooks.py):
    its pre-hooks on ``g``, its nodes down to its inputs' edges, its hooks on the gradient
    that reached each edge (None where none did, or where the input needs none), and hand on
    what they leave. ``rest``: the pass's other arguments to :func:`_propagate`."""
    hooks = NODE_PREHOOKS.get(id(node))
    if hooks is not None:
        g = run_node_prehooks(hooks, (g,))[0]
    inner = inner_nodes(node)
    if type(inner) is not list:  # (registration checked it: the graph changed since)
        raise RuntimeError(f"{node.name}: its hooks cannot run: {inner}")
    edges = node.edges
    inner_grads: dict = {node: g}
    inner_leaf_grads: dict = {}
    _propagate(inner, inner_grads, inner_leaf_grads, leaves, *rest, node)
    needed = rest[2]
    grad_inputs = []
    for edge in edges:
        if type(edge) is Node:
            found = inner_grads.pop(edge, None)
        else:
            found = None if edge is None else inner_leaf_grads.pop(id(edge), None)
        if needed is not None and edge is not None and not needed(edge):
            found = None  # (no target behind it: PyTorch's node computes none)
        grad_inputs.append(None if found is None else _total(found))
    hooks = COMPOSITE_POSTHOOKS[id(node)]
    shown = shown_inputs(node)
    if shown is None:
        grad_inputs = run_node_posthooks(hooks, tuple(grad_inputs), (g,))
    else:  # (torch's node has no input for a Python-scalar operand)
        returned = run_node_posthooks(hooks, tuple(grad_inputs[i] for i in shown), (g,))
        for i, gi in zip(shown, returned):
            grad_inputs[i] = gi
    for edge, gi in zip(edges, grad_inputs):
        if edge is None or gi is None:
            continue
        if type(edge) is Node:
            _accumulate(node_grads, edge, gi)
        else:
            _accumulate(leaf_grads, id(edge), gi)
            leaves[id(edge)] = edge


def _rule(node: Node, g: Any) -> Any:
    """``node``'s rule run on ``g``, its inputs unpacked where saved_tensors_hooks packed them."""
    if PACKED and id(node) in PACKED:
        kept = node.inputs, node.saved
        if id(node) in PACKED_OPERANDS:  # (first, as PyTorch's index nodes unpack theirs)
            node.saved = unpack_operands(node)
        node.inputs, node.saved = unpacked(node)
        try:
            return GRADIENTS[node.op](node, g)
        finally:
            node.inputs, node.saved = kept
    return GRADIENTS[node.op](node, g)


def _needed(leading: set, wanted_nodes: dict, targets: Sequence[Tensor]) -> Callable:
    """Whether a parent (a node or a leaf) leads to one of a pass's ``targets``."""
    leaf_ids = {id(t) for t in targets if t._node is None}

    def needed(parent: Any) -> bool:
        if type(parent) is Node:
            return parent in leading or parent in wanted_nodes
        return id(parent) in leaf_ids

    return needed


def _hooked(node: Node, g: Any, needed: Any) -> tuple:
    """``node``'s rule run between its pre-hooks and hooks (``grad_fn.register_prehook``
    and ``register_hook``), on its inputs unpacked where saved_tensors_hooks packed them:
    the gradient it got and its inputs' gradients, these brought to the inputs' shapes and
    dtypes first where a hook sees them, as in PyTorch."""
    several = type(g) is tuple  # (a node of several outputs: one gradient each)
    hooks = NODE_PREHOOKS.get(id(node))
    if hooks is not None:
        changed = run_node_prehooks(hooks, g if several else (g,))
        g = changed if several else changed[0]
    if g is None or several and all(o is None for o in g):
        # (pre-hooks returned None for every output: as PyTorch's node on undefined
        # gradients, it gives its inputs none; its hooks still run)
        input_grads: Any = (None,) * len(node.inputs)
    else:
        input_grads = _rule(node, g)
    hooks = NODE_POSTHOOKS.get(id(node))
    if hooks is None:
        return g, input_grads
    placed = []
    every = node.op == "function"  # (PyTorch shows what a Function's backward returned)
    for t, parent, gi in zip(node.inputs, node.parents, input_grads):
        if not every and (parent is None or (needed is not None and not needed(parent))):
            placed.append(None)  # (no gradient needed: PyTorch's node computes none)
            continue
        if gi is None or type(gi) is Slot:
            placed.append(gi)
            continue
        gi = gi.placed() if type(gi) is Piece else gi
        if gi.shape != t.shape:
            gi = sum_to(gi, recorded_shape(t, node) if SHAPES_BEFORE else t.shape, node)
        placed.append(gi if gi.dtype is t.dtype else gradient_as(gi, t.dtype))
    grads = g if several else (g,)
    shown = shown_inputs(node)
    if shown is None:
        return g, run_node_posthooks(hooks, tuple(placed), grads)
    returned = run_node_posthooks(hooks, tuple(placed[i] for i in shown), grads)
    for i, gi in zip(shown, returned):
        placed[i] = gi
    return g, tuple(placed)


def _finish(
    leaf_grads: dict, leaves: dict, targets: Any, captured: dict, create_graph: bool
) -> dict:
    """The gradients of ``targets`` by id; without them, leaves' gradients accumulated."""
    if targets is not None:
        for t in targets:
            if t._node is None and id(t) in leaf_grads and not _no_accumulator(t):
                captured[id(t)] = _leaf_total(id(t), leaf_grads[id(t)])
        return captured
    backend, compact = None, None
    for key, g in leaf_grads.items():
        leaf = leaves[key]
        if leaf._view_of is not None and _no_accumulator(leaf):
            continue
        if type(g) is not Tensor or GRAD_HOOKS:  # else it is the total already
            g = _leaf_total(key, g)
        if NODE_PREHOOKS and key in NODE_PREHOOKS:  # (its AccumulateGrad's pre-hooks)
            g = run_node_prehooks(NODE_PREHOOKS[key], (g,))[0]
        if g is None or not (leaf._requires_grad or leaf.requires_grad):
            # (a pre-hook returned (None,), or unset since the forward): PyTorch's
            # AccumulateGrad skips only the accumulation
            _after_accumulate(key, leaf, g)
            continue
        if GRAD_DTYPES:
            g = in_grad_dtype(leaf, g)
        if leaf._grad is None and g._shape != leaf._shape and not g.is_sparse:
            g = _in_leaf_shape(leaf, g)
        if create_graph:
            accumulated(leaf, g, True)
            _after_accumulate(key, leaf, g)
            continue
        if leaf._grad is not None:
            if leaf._grad.is_sparse and not g.is_sparse:  # (a dense sum, as PyTorch's)
                leaf._grad = Tensor((leaf._grad + g).native, g.backend, g.dtype)
            elif g.is_sparse and leaf._grad.is_sparse:
                from tensorweaver.nn.functional.sparse import carry_entries, sparse_entries

                before = sparse_entries(leaf._grad)  # (read before the sum moves its version)
                _add_into(leaf._grad, g)
                leaf._grad.__class__ = _sparse_class(2, g)
                carry_entries(leaf._grad, before, g)
            else:
                _add_into(leaf._grad, g)
            _after_accumulate(key, leaf, g)
            continue
        # A tensor of its own over the gradient's array (a copy where NumPy shares that
        # memory), as PyTorch's AccumulateGrad steals or clones it; not a detach() alias,
        # whose in-place changes would reach the gradient computed, which another leaf's
        # .grad or the caller's ``gradient=`` may be.
        native = g._unshared_native() if _SHARED_STORAGES else g.native
        # Stored gradients get the backend's preferred layout (a transposed view would make
        # every optimizer op on it slow), as PyTorch's gradient layout contract does.
        if g.backend is not backend:
            backend = g.backend
            compact = getattr(backend, "contiguous", None)
        if compact is not None:
            native = compact(native)
            if _out_of_order(leaf):  # a dense leaf laid out otherwise (channels-last): its
                native = _laid_out_like(backend, native, leaf.native)  # as torch's
        # (not the .grad setter: its checks hold for the engine's gradients; a sparse one
        # keeps its class, its layout; a dense one is made with g's Size, which the layouts
        # above keep: the constructor would find it again, ~0.4 us a leaf)
        if g.is_sparse:
            from tensorweaver.nn.functional.sparse import carry_entries

            leaf._grad = type(g)(native, backend, g._dtype)
            carry_entries(leaf._grad, g, stored=True)
        else:
            leaf._grad = _shaped(native, backend, g._dtype, g._shape)
        if POST_ACCUMULATE_HOOKS or NODE_POSTHOOKS:
            _after_accumulate(key, leaf, g)
    return {}


def _in_leaf_shape(leaf: Tensor, g: Tensor) -> Tensor:
    """A leaf's first gradient ``g`` of the shape the leaf had at the op, the leaf's shape
    having changed in place since (``unsqueeze_``, ``t_`` under no_grad): copied into the
    leaf's shape now, broadcasting, as PyTorch's AccumulateGrad copies a gradient that does
    not obey the leaf's layout (``empty_strided(leaf).copy_(g)``: a RuntimeError where ``g``
    cannot be broadcast to it)."""
    shape = leaf._shape
    lead = len(shape) - g.ndim
    for i, n in enumerate(g._shape):
        if lead + i < 0 or (n != 1 and n != shape[lead + i]):
            raise RuntimeError(
                f"The gradient of shape {list(g._shape)} cannot be copied into the leaf, whose "
                f"shape changed in place since the graph was recorded to {list(shape)} (the "
                "size of the gradient must match the leaf's at every non-singleton dimension); "
                "change the shape of a .detach() of the leaf instead"
            )
    return g.expand(shape).clone()


def _no_accumulator(leaf: Tensor) -> bool:
    """Whether ``leaf`` is a view made under no_grad (or inference_mode) of a tensor requiring
    grad: PyTorch gives it no gradient accumulator (its ``.grad`` stays None;
    ``autograd.grad`` finds it unused)."""
    view = leaf._view_of
    return view is not None and len(view) > 3 and view[3][1] in _MADE_WITHOUT_GRAD


def _after_accumulate(key: int, leaf: Tensor, g: Tensor | None) -> None:
    """The hooks PyTorch's AccumulateGrad of ``leaf`` runs once it has accumulated ``g``
    (None: nothing): the leaf's post-accumulate hooks, then the node's own hooks
    (``grad_fn.register_hook`` on it), which see no gradient computed and ``(g,)``."""
    if POST_ACCUMULATE_HOOKS and key in POST_ACCUMULATE_HOOKS:
        for hook in list(POST_ACCUMULATE_HOOKS[key].values()):
            hook(leaf)
    if NODE_POSTHOOKS and key in NODE_POSTHOOKS:
        run_node_posthooks(NODE_POSTHOOKS[key], (), (g,))


def _add_into(grad: Tensor, g: Tensor) -> None:
    """``grad += g`` in place (grad mode is off), as PyTorch's AccumulateGrad: a reference
    to ``.grad`` taken before backward sees the sum, and stays ``.grad``. The in-place
    method's last step only: this runs once per leaf in every backward. Into the gradient's
    own memory where it can be (gradient accumulation over micro-batches), as ``add_``'s
    ``foreach_add`` (x + y * 1: the same bits as x + y)."""
    if addable(grad, g):
        add_scaled(grad, g, 1, "add_")
    else:
        grad._assign(grad + g, "add_")


def in_grad_dtype(t: Tensor, g: Tensor) -> Tensor:
    """``g`` cast to the ``grad_dtype`` set on ``t`` (Tensor.grad_dtype), as PyTorch's
    AccumulateGrad casts it."""
    wanted = GRAD_DTYPES.get(id(t))
    return g if wanted is None or g.dtype is wanted else g.to(wanted)


def accumulated(t: Tensor, g: Tensor, create_graph: bool) -> None:
    """Add ``g`` to ``t.grad``: a copy when there is none, in place when there is, but a new
    tensor in the graph under ``create_graph`` (grad mode is on there in PyTorch), and a new
    sum on a non-leaf (``inputs=``), as PyTorch's retain_grad hook makes it."""
    grad = t._grad  # (not .grad: it warns on a non-leaf, which inputs= may name)
    if GRAD_DTYPES:
        g = in_grad_dtype(t, g)
    if grad is None:
        t.grad = _own(g, create_graph)
    elif create_graph or t._node is not None:
        t.grad = grad + g
    else:
        _add_into(grad, g)


def _own(g: Tensor, create_graph: bool) -> Tensor:
    """``g`` as a new ``.grad``: a tensor that shares no memory with another tensor (another
    leaf's ``.grad``, the caller's ``gradient=``, a hook's result) or with NumPy, as PyTorch's
    copy of a gradient it cannot steal; with ``create_graph`` a copy in the graph (PyTorch's
    ``CopyBackwards``), so two leaves given one gradient do not share one ``.grad`` object."""
    if create_graph:
        with enable_grad():
            return labelled(g.clone(), "CopyBackwards", g)
    return Tensor(g._unshared_native(), g.backend, g.dtype)


def _retained_first(g: Tensor) -> Tensor:
    """A retained non-leaf's first ``.grad``: as PyTorch's retain_grad hook, a clone in C
    order whatever ``g``'s layout (``CloneBackward0`` in the graph with ``create_graph``:
    ``run``'s grad mode)."""
    return g.clone(memory_format=contiguous_format)


def _leaf_total(key: int, entry: Any) -> Tensor:
    """A leaf's summed gradient, passed through the leaf's hooks."""
    g = _total(entry)
    if GRAD_HOOKS and key in GRAD_HOOKS:
        g = run_hooks(GRAD_HOOKS[key], g)
    return g


def _root_grad(t: Tensor, gradient: Any, what: str) -> Tensor:
    if gradient is None:
        if t.numel() != 1:
            raise RuntimeError(
                f"grad can be implicitly created only for scalar outputs; {what} has shape "
                f"{list(t.shape)}: pass gradient= (a tensor of that shape), or reduce it first "
                "(e.g. loss.sum())"
            )
        if t.dtype.is_complex:
            raise RuntimeError(
                f"grad can be implicitly created only for real scalar outputs but got {t.dtype}: "
                f"pass gradient= for {what}, or backpropagate a real scalar (e.g. z.abs().sum())"
            )
        return Tensor(t.backend.full(t.shape, 1, t.dtype), t.backend, t.dtype)
    if not isinstance(gradient, Tensor):
        gradient = Tensor(t.backend.full(t.shape, gradient, t.dtype), t.backend, t.dtype)
    if gradient.shape != t.shape:
        raise RuntimeError(
            f"Mismatch in shape: grad_output has shape {list(gradient.shape)} and output has "
            f"shape {list(t.shape)}"
        )
    return gradient


def _roots(tensors: Any, gradients: Any, what: str, caller: str) -> tuple[list, list]:
    """The tensors differentiated and the gradient each starts with (PyTorch's checks)."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if gradients is None or isinstance(gradients, Tensor):
        gradients = [gradients] * len(tensors) if gradients is None else [gradients]
    else:
        gradients = list(gradients)
    if len(gradients) != len(tensors):
        raise RuntimeError(
            f"{caller}: got {len(tensors)} tensors and {len(gradients)} gradients; pass one "
            "gradient (or None for a scalar) per tensor"
        )
    for i, t in enumerate(tensors):
        if not t.requires_grad:
            raise RuntimeError(
                f"element {i} of {what} does not require grad and does not have a grad_fn: "
                "it was not computed from a tensor with requires_grad=True (or was computed "
                "under tw.no_grad())"
            )
    return tensors, [_root_grad(t, g, "the output") for t, g in zip(tensors, gradients)]


def _inputs(inputs: Any, caller: str) -> tuple[list, list]:
    """``inputs`` as a list, and the same with each tensor once (the first of its repeats):
    PyTorch's pass takes a tensor named twice once (its hooks run once, its ``.grad`` gets
    one gradient), and ``grad`` returns that gradient at each place it was named. A dict
    names its values (as torch 2.13's; ``grad`` answers with a dict by the same keys)."""
    if isinstance(inputs, Tensor):
        inputs = [inputs]
    elif type(inputs) is dict:
        inputs = list(inputs.values())
    elif isinstance(inputs, Mapping):  # (PyTorch takes a dict only)
        raise TypeError(
            f"`inputs` argument to `{caller}()` must be a dict, not {type(inputs).__name__}. "
            "Other Mapping types are not supported: pass dict(inputs)"
        )
    else:
        inputs = list(inputs)
    if not inputs:
        raise RuntimeError(
            f"`inputs` argument to `{caller}()` cannot be empty: name the tensors to "
            "differentiate with respect to (or pass None for every leaf)"
        )
    return inputs, list({id(t): t for t in inputs}.values())


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables: Any = None,
    inputs: Any = None,
) -> None:
    """Accumulate the gradients of ``tensors`` (weighted by ``grad_tensors``) into the
    ``.grad`` of every leaf, or of ``inputs`` only."""
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError(
                "backward: pass grad_tensors only; grad_variables is its deprecated name"
            )
        warnings.warn(
            "backward: grad_variables is deprecated; pass grad_tensors",
            FutureWarning,
            stacklevel=2,
        )
        grad_tensors = grad_variables
    tensors, gs = _roots(tensors, grad_tensors, "tensors", "backward")
    retain = create_graph if retain_graph is None else retain_graph
    if inputs is None:
        run(tensors, gs, retain, create_graph)
        return
    _, inputs = _inputs(inputs, "backward")
    for t in inputs:  # (PyTorch calls retain_grad on each input before the pass)
        if not t.requires_grad:
            raise RuntimeError(
                "can't retain_grad on Tensor that has requires_grad=False: backward(inputs=) "
                f"names a tensor of shape {list(t.shape)} that does not require grad; leave it "
                "out of inputs, or call .requires_grad_() on it before the forward"
            )
    found = run(tensors, gs, retain, create_graph, inputs)
    with set_grad_enabled(bool(create_graph)):  # backward's grad mode, as for every leaf
        for t in inputs:
            if id(t) in found:
                node = t._node
                if node is not None and node.retained is not None and node.retained() is t:
                    continue  # its retain_grad filled .grad in the pass: once, as PyTorch's
                g = found[id(t)]
                if node is None and NODE_PREHOOKS and id(t) in NODE_PREHOOKS:
                    g = run_node_prehooks(NODE_PREHOOKS[id(t)], (g,))[0]
                if g is not None:  # (None: a pre-hook's, which leaves .grad as it is)
                    accumulated(t, g, create_graph)
                if node is None:
                    _after_accumulate(id(t), t, g)


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``
    (a dict by the same keys where ``inputs`` is a dict)."""
    if not only_inputs:
        warnings.warn(
            "grad: only_inputs is deprecated and ignored (gradients go to inputs only); "
            "use tw.autograd.backward to accumulate into .grad",
            FutureWarning,
            stacklevel=2,
        )
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "grad: materialize_grads=True gives zeros for unused inputs, so allow_unused must "
            "be True or not passed, but got allow_unused=False"
        )
    names = inputs if type(inputs) is dict else None
    inputs, once = _inputs(inputs, "grad")
    if is_grads_batched:
        result = _batched(outputs, inputs, grad_outputs, retain_graph, create_graph,
                          allow_unused or materialize_grads)  # fmt: skip
    else:
        result = _grads(outputs, inputs, once, grad_outputs, retain_graph, create_graph,
                        allow_unused or materialize_grads)  # fmt: skip
    if materialize_grads:  # as PyTorch: zeros_like, requiring grad under create_graph
        result = [
            zeros_like(t).requires_grad_(create_graph) if g is None else g
            for t, g in zip(inputs, result)
        ]
    return tuple(result) if names is None else dict(zip(names, result))


def _grads(
    outputs: Any,
    inputs: list,
    once: list,
    grad_outputs: Any,
    retain_graph: bool | None,
    create_graph: bool,
    allow_unused: bool | None,
) -> list:
    """The gradient of each of ``inputs`` (``once``: each tensor once), None for an unused
    one where ``allow_unused``."""
    outputs, gs = _roots(outputs, grad_outputs, "tensors", "grad")
    for t in once:  # (after the outputs' checks: PyTorch blames a constant output first)
        if not t.requires_grad:
            raise RuntimeError("grad: one of the differentiated tensors does not require grad")
    retain = create_graph if retain_graph is None else retain_graph
    found = run(outputs, gs, retain, create_graph, once)
    if not create_graph:  # (one object per tensor, at each place it is named, as PyTorch's)
        found = {key: g.detach() for key, g in found.items()}
    result = []
    for i, t in enumerate(inputs):
        g = found.get(id(t))
        if g is None and not allow_unused:
            raise RuntimeError(
                f"grad: input {i} (shape {list(t.shape)}) was not used in the graph; pass "
                "allow_unused=True if that is expected"
            )
        result.append(g)
    return result


def _batched(
    outputs: Any,
    inputs: list,
    grad_outputs: Any,
    retain_graph: bool | None,
    create_graph: bool,
    allow_unused: bool | None,
) -> list:
    """``is_grads_batched``: one ``grad`` per slice along the first dimension of every
    grad_output, the results stacked (PyTorch vectorizes this with vmap; same values), None
    for an unused input (materialized after, unbatched, as PyTorch's)."""
    from tensorweaver.ops.movement import stack

    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    batch = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs or ())
    if len(batch) != len(outputs) or any(not isinstance(g, Tensor) for g in batch):
        raise RuntimeError(
            "grad(is_grads_batched=True): pass one batched tensor in grad_outputs per output"
        )
    sizes = {g.shape[0] if g.ndim else None for g in batch}
    if len(sizes) != 1 or None in sizes:
        raise RuntimeError(
            "grad(is_grads_batched=True): every grad_output needs the same leading (batch) "
            f"dimension; got shapes {[list(g.shape) for g in batch]}"
        )
    (size,) = sizes
    retain = create_graph if retain_graph is None else retain_graph
    rows = [
        grad(outputs, inputs, [g[k] for g in batch], retain or k < size - 1, create_graph,
             allow_unused=allow_unused)
        for k in range(size)
    ]  # fmt: skip
    return [None if col[0] is None else stack(list(col)) for col in zip(*rows)]
