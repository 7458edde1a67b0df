"""A node of the autograd graph: how one tensor was made from others.

A node holds its op's name (the key into :data:`tensorweaver.autograd.gradients.GRADIENTS`),
the input tensors, where each input's gradient goes (``parents``: the input's producer node,
the input itself when it is a leaf that requires grad, or None) and whatever the rule needs.
It never holds its output tensor, so a tensor and its node never keep each other alive; a
rule that needs the output rebuilds it from the saved array (:meth:`Node.output`).
"""

from __future__ import annotations

import weakref
from typing import Any

from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.names import BY_OPERANDS, grad_fn_name

#: The ``saved_tensors_hooks`` in force, innermost last (autograd/graph.py): while there is
#: one, each new node passes the inputs it keeps through its pack hook.
SAVED_TENSORS_HOOKS: list = []


#: id(node) -> the unpack hook of the node whose inputs were packed (emptied as nodes die;
#: autograd/graph.py fills it).
PACKED: dict[int, Any] = {}


class HooksOff:
    """Context manager: every ``saved_tensors_hooks`` (if one is on) off while the block
    runs, outer ones too, so that what runs in it (a hook, the inner steps of an op that
    packs what PyTorch's node saves itself) saves nothing through any; ``as`` gives the
    innermost's ``(pack, unpack)``, None where none is on. Its pack runs with grad mode off,
    as PyTorch's: a copy it makes of a saved output records no node that would hold the
    graph in a reference cycle."""

    __slots__ = ("hooks",)

    def __enter__(self) -> tuple | None:
        if not SAVED_TENSORS_HOOKS:
            self.hooks = None
            return None
        self.hooks = SAVED_TENSORS_HOOKS[:]
        SAVED_TENSORS_HOOKS.clear()
        pack, unpack = self.hooks[-1]
        return _without_grad(pack), unpack

    def __exit__(self, *exc: object) -> None:
        if self.hooks is not None:
            SAVED_TENSORS_HOOKS[:0] = self.hooks  # (before any the block left on)


def _without_grad(pack: Any) -> Any:
    """``pack`` called with grad mode off."""

    def packed(t: Any) -> Any:
        with no_grad():
            return pack(t)

    return packed


#: True while a node is made for a PyTorch node that packs its operands in order, self first:
#: a matmul's for AddmmBackward0 or MvBackward0 (self (mat1), then mat2 (vec); other matmul
#: nodes pack mat2 first, as MmBackward0 and BmmBackward0), a mul's or div's for
#: DotBackward0, AddcmulBackward0, AddcdivBackward0 (other binary nodes pack other first, as
#: MulBackward0): autograd/graph.py ``pack_inputs``.
SELF_FIRST = [False]


class SelfFirst:
    """Context manager: matmul and binary nodes made in the block pack self first
    (:data:`SELF_FIRST`)."""

    __slots__ = ("before",)

    def __enter__(self) -> None:
        self.before = SELF_FIRST[0]
        SELF_FIRST[0] = True

    def __exit__(self, *exc: object) -> None:
        SELF_FIRST[0] = self.before


#: PyTorch's error for a node's saved tensor read once backward freed it (a ``_saved_*``
#: attribute of an index or convolution node).
SAVED_TENSOR_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


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
        "take", "gather", "scatter", "scatter_add", "tril", "triu", "cumsum",
        "sign", "floor", "ceil", "round", "trunc", "floor_divide", "conj", "real", "imag",
        "draw",
    }
)  # fmt: skip


#: PyTorch's nodes (by ``grad_fn`` name) that save their first output for backward (its
#: ``_saved_result`` and the like: derivatives.yaml's ``result``), as a run of torch 2.13's
#: op database finds them (the saved tensors that share the output's memory). Changing that
#: output in place before backward is PyTorch's "modified by an inplace operation" error
#: (so for the in-place forms whose nodes save their result: ``elu_``'s ``EluBackward1``),
#: whether or not our rule reads the output (ours keep its old array, so they could go on).
#: A node of several outputs counts for each (ours has one node per output), but for those
#: of :data:`SAVES_ONLY_OUTPUTS`.
SAVES_OUTPUT = frozenset(
    {
        "AmaxBackward0", "AminBackward0", "AminmaxBackward0", "CdistBackward0", "CholeskyBackward0",
        "CeluBackward1", "CholeskyInverseBackward0", "CholeskySolveBackward0",
        "CopysignBackward0",
        "CopysignBackward1", "CtcLossBackward0", "CumprodBackward0", "DistBackward0",
        "EluBackward1", "Exp2Backward0", "ExpBackward0", "Expm1Backward0", "HypotBackward0",
        "IndexReduceBackward0", "LdexpBackward0", "LinalgCholeskyExBackward0",
        "LinalgDetBackward0", "LinalgEigBackward0", "LinalgEighBackward0",
        "LinalgHouseholderProductBackward0", "LinalgInvExBackward0", "LinalgLstsqBackward0",
        "LinalgLuFactorExBackward0", "LinalgLuSolveBackward0", "LinalgPinvBackward0",
        "LeakyReluBackward1", "LinalgQrBackward0", "LinalgSolveExBackward0",
        "LinalgSolveTriangularBackward0", "LinalgSvdBackward0", "LinalgVectorNormBackward0",
        "LogSoftmaxBackward0", "LogcumsumexpBackward0", "LogsumexpBackward0", "MaxBackward1",
        "MedianBackward0", "MinBackward1", "NanmedianBackward0",
        "NormBackward1", "OrmqrBackward0", "PdistBackward0",
        "PolarBackward0", "PowBackward1", "PowBackward2", "ProdBackward0", "ProdBackward1",
        "ReciprocalBackward0", "ReluBackward0", "RreluWithNoiseBackward1", "RsqrtBackward0",
        "SafeSoftmaxBackward0",
        "ScaledDotProductFlashAttentionForCpuBackward0", "ScatterReduceBackward0",
        "SegmentReduceBackward0", "SgnBackward0", "SigmoidBackward0", "SoftmaxBackward0",
        "SpecialErfcxBackward0", "SpecialI0EBackward0", "SpecialI1Backward0",
        "SpecialI1EBackward0", "SpecialLogNdtrBackward0", "SpecialNdtriBackward0",
        "SqrtBackward0", "StdBackward0", "StdMeanBackward0", "TanBackward0", "TanhBackward0",
        "TriangularSolveBackward0",
    }
)  # fmt: skip

#: The nodes of :data:`SAVES_OUTPUT` of several outputs that save only some of them (by
#: output number): StdMeanBackward0 keeps the std, not the mean (its formula recomputes it).
SAVES_ONLY_OUTPUTS = {"StdMeanBackward0": (0,)}

#: The nodes of :data:`SAVES_OUTPUT` whose output was changed in place after they were
#: recorded (``Tensor._assign`` tells :func:`output_changed`), each with a weak reference to
#: that output, its shape, its version before the first such change and its output number:
#: backward through one raises. The node of several outputs (:func:`output_node`'s group) is
#: marked too, so a backward entering by another of its outputs raises, as PyTorch's one node.
#: Weak keys: a node freed with its graph leaves.
CHANGED_OUTPUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


#: Whether the nodes of an op save their output, for the ops whose node name is the op's
#: alone (filled as ops are met: a name costs string work, and in-place ops are common).
_SAVES_OUTPUT_BY_OP: dict[str, bool] = {}


def saves_output(node: Node) -> bool:
    """Whether PyTorch's node for ``node`` saves its output (:data:`SAVES_OUTPUT`), so that
    changing that output in place before backward is refused."""
    label = node.label
    if label is not None:
        if label not in SAVES_OUTPUT:
            return False
        only = SAVES_ONLY_OUTPUTS.get(label)
        return only is None or output_nr(node) in only
    op = node.op
    known = _SAVES_OUTPUT_BY_OP.get(op)
    if known is None:
        known = grad_fn_name(node) in SAVES_OUTPUT
        if op not in BY_OPERANDS:  # (else the name depends on the operands: asked each time)
            _SAVES_OUTPUT_BY_OP[op] = known
    return known


def output_changed(node: Any, output: Any, version_before: int, follow: bool = True) -> None:
    """Note that ``output``, made by ``node``, changed in place (from ``version_before``);
    ``follow``: whether a tensor packed of it may follow the change (not a change of shape,
    which PyTorch's backward refuses)."""
    if type(node) is not Node or not saves_output(node) or node in CHANGED_OUTPUTS:
        return
    if follow and (PACKED or node.op == "function") and node.saved is not None:
        # (saved_tensors_hooks may have packed that output: then no version is checked)
        from tensorweaver.autograd.graph import packed_output_follows

        if packed_output_follows(node, output):
            return
    known = (weakref.ref(output), list(output.shape), version_before, output_nr(node))
    CHANGED_OUTPUTS[node] = known
    group = node.view
    if type(group) is Node and group not in CHANGED_OUTPUTS:
        CHANGED_OUTPUTS[group] = known


#: The integer outputs that their call's node saves (the indices of max/min(dim), sort, topk
#: and the order statistics): they have no node of their own to be told of an in-place
#: change. By id: (a weak reference to the output, one to the node, the output number).
SAVED_INTEGER_OUTPUTS: dict[int, tuple] = {}


def _forget_integer_output(ref: weakref.ref, key: int) -> None:
    entry = SAVED_INTEGER_OUTPUTS.get(key)
    if entry is not None and entry[0] is ref:
        del SAVED_INTEGER_OUTPUTS[key]


def saves_integer_output(values: Any, output: Any, number: int = 1) -> None:
    """Note that the node of ``values`` (if any) saves ``output``, output ``number`` of its
    call, an integer tensor with no node: changing it in place before backward through that
    node is then PyTorch's "modified by an inplace operation" error. Inside
    ``saved_tensors_hooks``, indices that a gather node keeps are packed instead
    (:func:`_packs_indices`): backward reads what unpack gives, with no version check."""
    node = values._node
    if node is not None:
        if SAVED_TENSORS_HOOKS and _packs_indices(node, output):
            return
        key = id(output)
        ref = weakref.ref(output, lambda r, key=key: _forget_integer_output(r, key))
        SAVED_INTEGER_OUTPUTS[key] = (ref, weakref.ref(node), number)


def _packs_indices(node: Node, indices: Any) -> bool:
    """Pass ``indices`` through the innermost pack hook where the gather node that keeps them
    (``node``, or the one under its squeeze) is found, as PyTorch's SortBackward0,
    MaxBackward0, TopkBackward0... pack the indices they save; whether it was. That node's
    own version check of them goes, as PyTorch checks no version of a packed tensor."""
    if node.op == "reshape" and type(node.parents[0]) is Node:
        node = node.parents[0]
    if node.op != "gather" or node.saved[1].numel() != indices.numel():
        return False
    from tensorweaver.autograd.graph import pack_saved

    pack_saved(node, 1, indices)
    if getattr(node, "operands", None):  # (a checked gather's: ops/index.py)
        node.operands = ()
    return True


def integer_output_changed(output: Any, version_before: int) -> None:
    """Note that ``output``, a tensor with no node, changed in place: the node that saved it,
    if it is one of :data:`SAVED_INTEGER_OUTPUTS`, refuses backward."""
    entry = SAVED_INTEGER_OUTPUTS.get(id(output))
    if entry is None or entry[0]() is not output:
        return
    node = entry[1]()
    if node is not None and node not in CHANGED_OUTPUTS:
        CHANGED_OUTPUTS[node] = (weakref.ref(output), list(output.shape), version_before, entry[2])


def saves_integer_input(out: Any, *indices: Any) -> Any:
    """``out``, whose node (if any) saves ``indices``, the integer or bool tensors its call
    took (the index of gather, scatter, index_select..., the index tensors and masks of
    ``x[i]``, which PyTorch's GatherBackward0, IndexBackward0 and the like save): the engine
    refuses backward through that node once one of them (or a view sharing its memory)
    changed in place, as PyTorch's. The only such tensors of that node: they replace any
    noted before (of an inner call, made for this one)."""
    node = out._node
    if node is not None:
        # (held, as PyTorch's saved variable: a view made for the call alone still sees a
        # later change of its base)
        node.operands = tuple([saved_operand(t, True) for t in indices])
        if SAVED_TENSORS_HOOKS:  # (PyTorch's node packs what it saves)
            from tensorweaver.autograd.graph import pack_operands

            pack_operands(node, indices)
    return out


def saved_operand(t: Any, held: bool) -> tuple:
    """An entry of ``Node.operands``: a call that returns ``t`` (None once it is gone) and
    ``t``'s version now, which the engine checks at backward. ``held``: the entry keeps ``t``
    alive (as PyTorch's saved variable, so that a later change of the memory it views
    reaches it), else it holds ``t`` weakly (once gone, nothing can change it)."""
    return (lambda t=t: t) if held else weakref.ref(t), t._version


class ViewChange:
    """The last edge of the node that writes a view's change back into its base (ops/index.py
    ``setitem``, PyTorch's ``CopySlices``): it stands for the edges of ``node``, the op that
    changed the view, but its first (the view's own history), as PyTorch's CopySlices has
    them after the base's. autograd/grad_fn.py (``through_views``) reads them from ``node``
    when they are asked for (what PyTorch's node for ``node`` has is its to know)."""

    __slots__ = ("node",)

    def __init__(self, node: Node) -> None:
        self.node = node


#: The views whose history PyTorch cannot regenerate after an in-place change of their base
#: (tensor.py ``_reread`` gives each an invalid history), by id: (a weak reference to the
#: view, that history). While there is one, :class:`Node` refuses such a view as an input,
#: as PyTorch refuses it at the use, not at backward. Every node is recorded through
#: ``Node.__init__`` (ops/apply.py, the elementwise fast paths, indexing, autograd.Function,
#: linalg, fft...): the one place that sees every use that records.
INVALID_HISTORIES: dict[int, tuple] = {}


def note_invalid_history(view: Any) -> None:
    """Note that ``view`` now holds an invalid history (its ``_node``): recording a node on
    it raises that history's error, until the view is freed."""
    key = id(view)
    ref = weakref.ref(view, lambda r, key=key: _forget_invalid_history(r, key))
    INVALID_HISTORIES[key] = (ref, view._node)


def _forget_invalid_history(ref: weakref.ref, key: int) -> None:
    entry = INVALID_HISTORIES.get(key)
    if entry is not None and entry[0] is ref:
        del INVALID_HISTORIES[key]


def _refuse_invalid_histories(inputs: tuple) -> None:
    """PyTorch's error where an input of a node being recorded is a view of
    :data:`INVALID_HISTORIES` that still holds its invalid history."""
    for t in inputs:
        entry = INVALID_HISTORIES.get(id(t))
        if entry is not None and entry[0]() is t and t._node is entry[1]:
            raise RuntimeError(entry[1].message)


#: node -> weak references to the tensors :meth:`Node.output` made of its saved output in a
#: ``create_graph`` backward (the nodes that backward records keep them: ``exp``'s
#: ``g * result``), which :func:`output_rewritten` rebinds as it rebinds the node's own.
#: Weak keys: a node freed with its graph leaves.
OUTPUT_TENSORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: tensor.py's Tensor, once :meth:`Node.output` first needs it (a function-level import on
#: every call cost ~3 us there).
_Tensor: Any = None


def output_rewritten(node: Any, old: Any, new: Any) -> None:
    """The output array ``old`` that ``node`` made was replaced by ``new`` unseen by autograd
    (a write through ``.data``): a node that keeps that array for its rule (``exp``'s, or
    ``relu``'s first saved value) reads the new one, as PyTorch's node reads the memory the
    write changed, and so do the nodes a ``create_graph`` backward recorded on it (PyTorch's
    saved result shares that memory)."""
    if type(node) is not Node:
        return
    if OUTPUT_TENSORS:
        for ref in OUTPUT_TENSORS.get(node, ()):
            made = ref()
            if made is not None and made.native is old:
                made.native = new
    saved = node.saved
    if saved is None:  # (released by a backward: it keeps nothing to rewrite)
        return
    if PACKED and node.op != "function":
        from tensorweaver.autograd.graph import packed_output_rewritten

        if packed_output_rewritten(node, old, new):
            return
    if saved is old:
        node.saved = new
    elif node.op == "function":  # (a custom Function's ctx saved the output's array)
        from tensorweaver.ops.several_outputs import _TwoOutputs

        index = saved[3]
        rewritten = getattr(saved[0], "_output_rewritten", None)
        if rewritten is not None:  # (a linalg call's one node: linalg/one_node.py)
            rewritten(saved[1], index, old, new)
            return
        # (ops/several_outputs.py two_outputs's ctx keeps the outputs as tensors over arrays)
        two_outputs = saved[0] is _TwoOutputs
        for kept in saved[1]._saved:
            if getattr(kept, "native", None) is old and (
                two_outputs or getattr(kept, "index", None) == index
            ):
                kept.native = new
    elif (node.op == "max" or node.op == "min") and saved is not None and saved[2] is old:
        node.saved = (saved[0], saved[1], new)  # (amax/amin's rule reads its output)
    elif node.op == "fused":
        kept = saved[1]
        if getattr(kept, "out", None) is old:  # (a FromOutput: its rules read the output)
            kept.out = new
            inner = kept.saved  # (the backend's saved values: the output first, softmax's)
            if type(inner) is tuple and inner and inner[0] is old:
                kept.saved = (new, *inner[1:])
    elif node.op == "linalg_function":
        # (a backend's whole linalg call, linalg/fused.py: its backward reads the output the
        # backend recorded, which takes the new values where the backend can write them)
        _fused_output_rewritten(node, saved[1], old, new)
    elif node.op == "linalg_output":  # (one of several outputs of such a call: its node's)
        group = node.parents[0] if node.parents else None
        if type(group) is Node and group.op == "linalg_outputs":
            _fused_output_rewritten(group, group.saved[1][saved[0]], old, new)
    elif type(saved) is tuple and len(saved) == 4 and saved[2] is old and saved[1] is None:
        # (a linalg primitive's one output, kept beside what its rule reads: solve_triangular's
        # flags, lu_factor's pivots; linalg/primitives.py _wrap)
        node.saved = (saved[0], None, new, saved[3])
    elif type(saved) is tuple and saved and saved[0] is old and node.op == "relu":
        # (a fused kernel's mask, saved beside the output, holds the old values': dropped,
        # the rule reads the output; ``old`` may be ``new``, written in its memory)
        node.saved = (new, None)


def _fused_output_rewritten(node: Node, i: int, old: Any, new: Any) -> None:
    """Output ``i`` of the backend's whole linalg call that ``node`` records (its ``saved``:
    the backend's record, ..., the :class:`~tensorweaver.linalg.fused_backward.Attached`
    formula's outputs) was replaced by ``new``: written where the backend's backward reads
    it, and where the formula's (``create_graph``) does."""
    saved = node.saved
    made = getattr(node, "made", None)  # (unset: a node the formula's graph made anew)
    if made is None or made[i] is old:
        # (else ``old`` is an array ``.data`` was rebound to: the backend's record keeps the
        # call's memory, which a write into that array leaves alone, as PyTorch's node)
        if made is not None and new is not old:
            node.made = (*made[:i], new, *made[i + 1 :])
        rewrite = getattr(node.inputs[0].backend, "rewrite_linalg_output", None)
        if rewrite is not None:
            rewrite((saved[0], i), new)
    attached = saved[4]
    if attached is not None:
        attached.natives = tuple([new if n is old else n for n in attached.natives])


def check_output_unchanged(node: Any) -> None:
    """PyTorch's error where ``node`` saved its output and that output changed in place."""
    known = CHANGED_OUTPUTS.get(node)
    if known is not None:
        output, shape, before, number = known
        now = output()._version if output() is not None else before + 1
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: the tensor of shape {shape}, which is output {number} of "
            f"{node.name}, is at version {now}; expected version {before} instead. "
            f"{node.name} saves its output for backward: change a .clone() of it instead"
        )


def frees_nothing(out: Any, *inputs: Any) -> Any:
    """``out``, made from ``inputs`` (every operand: the walk stops at the tensors' nodes;
    numbers are passed over) by a composite that PyTorch records as one node saving no
    tensor, only numbers: the nodes the composite recorded (a product by its ``alpha``, the
    ``where`` that gives ``sign`` of NaN 0, the scatter of ``diag``) keep what their rules
    read after a backward, so ``y.backward()`` may run again, as PyTorch's; nor does a
    checkpoint count them as saving (:func:`saves_a_tensor`)."""
    stop = {getattr(t, "_node", None) for t in inputs}
    todo = [out._node]
    while todo:
        node = todo.pop()
        if type(node) is Node and node not in stop and not node.keeps_saved:
            node.keeps_saved = True
            todo.extend(node.parents)
    return out


def _reads_no_value(node: Node) -> bool:
    """Whether ``node``'s rule reads no saved value for the inputs that need a gradient,
    where its op's rule may (PyTorch saves a tensor only for a formula it will run):
    ``remainder``'s divisor is read only for the divisor's own gradient."""
    return node.op == "remainder" and node.parents[1] is None


#: Labels of a ``div`` by the element count that ends a mean (ops/reduce.py).
_MEAN_LABELS = ("MeanBackward0", "MeanBackward1")
_PLAIN = frozenset({int, float, bool, complex, str, type(None)})


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


def saves_a_tensor(node: Any) -> bool:
    """Whether PyTorch's node for ``node`` would save a tensor for backward: what makes its
    non-reentrant checkpoint recompute (and check its inputs' versions). A node of an op
    that reads no value saves none; nor does a product or quotient by a number (PyTorch
    does not pack a wrapped Python number: ours is a 0-d constant with no graph)."""
    op = node.op
    if op in SHAPE_ONLY_OPS and _no_data(node.saved):
        return False
    if node.keeps_saved or _reads_no_value(node):
        return False
    if op == "mul" or op == "div":
        for i, t in enumerate(node.inputs):
            kept = node.parents[1 - i] is not None if op == "mul" else i == 1 or _needs(node)
            if kept and not _constant_number(t):
                return True
        return False
    if op == "function":
        return bool(node.saved[1]._saved)
    return True


def _needs(node: Any) -> bool:
    return node.parents[1] is not None  # (a quotient's numerator: for the divisor's gradient)


def _constant_number(t: Any) -> bool:
    return not t.shape and t._node is None and not t.requires_grad


class InputShape:
    """What backward needs of an input whose value its rule never reads."""

    __slots__ = ("shape", "dtype", "backend", "_version")

    def __init__(self, t: Any) -> None:
        self.shape, self.dtype, self.backend = t.shape, t.dtype, t.backend
        self._version = t._version  # as recorded: nothing this rule reads can change


_new_input_shape = InputShape.__new__


def shape_of(t: Any) -> InputShape:
    """An :class:`InputShape` of the Tensor ``t``, read from its slots (as Node's own inputs'
    are: no property's frame, 0.1 us less an output of every multi-output call)."""
    kept = _new_input_shape(InputShape)
    kept.shape, kept.dtype, kept.backend, kept._version = t._shape, t._dtype, t.backend, t._version
    return kept


def _shapes_of(values: tuple) -> tuple:
    """``values`` with an :class:`InputShape` for each tensor (already one: kept)."""
    from tensorweaver.tensor import Tensor

    return tuple([InputShape(v) if isinstance(v, Tensor) else v for v in values])


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


def output_node(op: str, group: Node, shape: InputShape, saved: Any) -> Node:
    """The node of an output (``shape``: its shape), one of the several differentiable
    outputs of one call whose node is ``group``, PyTorch's one node for them all: the
    output's ``grad_fn`` is ``group``'s (its ``view`` is ``group``: autograd/grad_fn.py
    ``grad_fn_of`` follows it), where that node's hooks run. Its rule hands the output's
    summed gradient on to ``group`` as a :class:`Slot`; its one input stands for ``group``."""
    # Node.__init__'s fields set here at once: its checks of the inputs have none to check
    # (``group`` was checked), and its call cost 0.3 us of each output of every eigh or qr
    node = _new_node(Node)
    node.op, node.inputs, node.parents, node.versions = op, (shape,), (group,), (shape._version,)
    node.epoch, node.saved, node.retained, node.label = INPLACE_CHANGES[0], saved, None, None
    node.view, node.keeps_saved, node.edges = group, False, None
    return node


def output_nr(parent: Any) -> int:
    """Which output of its call's node ``parent`` (an edge: a node, a leaf or None) is: 0
    but for the node of one of several outputs (:func:`output_node`)."""
    if type(parent) is not Node or type(parent.view) is not Node:
        return 0
    return parent.saved[3]  # (an output's node is a "function" node: see its callers)


#: The ops of :data:`SHAPE_ONLY_OPS` that keep an index tensor (``saved[1]``) for backward,
#: as PyTorch's IndexBackward0, GatherBackward0, ScatterBackward0, ... save theirs.
SAVES_INDEX = frozenset({"take", "gather", "scatter", "scatter_add"})


def _check_not_saved(node: Node) -> None:
    """Refuse an inference tensor among the inputs that ``node`` saves for backward, as
    PyTorch does: those its rule reads (autograd/gradients.py ``READS_INPUT``: ``where``
    reads only its condition, ``mul`` each operand only for the other's gradient; the ops of
    :data:`SHAPE_ONLY_OPS` read none, an autograd.Function checks what its ctx saved).
    Called only where an input may be one."""
    from tensorweaver.ops.memory_facts import is_inference

    op = node.op
    if op in SHAPE_ONLY_OPS or all(t._inference and is_inference(t) for t in node.inputs):
        return  # (PyTorch's autograd skips an op of inference tensors alone: none is saved)
    from tensorweaver.autograd.gradients import READS_INPUT

    reads = READS_INPUT.get(op)
    for i, t in enumerate(node.inputs):
        if t._inference and (reads is None or reads(node, i)):
            refuse_saved(op, t)


def refuse_saved(op: str, t: Any) -> None:
    """PyTorch's error where the node of ``op`` saves ``t`` and it is an inference tensor."""
    from tensorweaver.ops.memory_facts import is_inference

    if is_inference(t):
        raise RuntimeError(
            f"{op}: Inference tensors cannot be saved for backward. To work around you can "
            "make a clone to get a normal tensor and use it in autograd (an operand made "
            "under tw.inference_mode(), used with a tensor that requires grad)"
        )


# The former private names, for callers not yet renamed (ops/elementwise.py,
# nn/functional/loss.py, tensor.py).
_refuse_saved = refuse_saved
_saves_output = saves_output


#: id(view) -> (a weak reference to the view, the node it held when a write missed it): the
#: views whose node is rebuilt when next needed (autograd/view_regeneration.py). Kept here so
#: that :class:`Node` tests it without importing that module (which imports this one).
STALE_VIEWS: dict[int, tuple] = {}


def regenerate_inputs(inputs: tuple) -> None:
    """Rebuild each view of :data:`STALE_VIEWS` among ``inputs`` before their nodes are read
    (a node's edges, the engine's roots), as PyTorch's ``collect_next_edges`` reads each
    one's ``grad_fn``."""
    for t in inputs:
        if id(t) in STALE_VIEWS:
            # (imported here: that module imports this one; only where a view is stale)
            from tensorweaver.autograd.view_regeneration import regenerate

            regenerate(t)


#: The shape each tensor had before its first in-place shape change (``t_``, ``unsqueeze_``...:
#: ops/inplace_shape.py) and its version then, by id (tensor.py ``note_shape_change``): a
#: node recorded before that change reads its input's shape there, as PyTorch's edges keep
#: the input's metadata as recorded; a node recorded on such a tensor afterwards keeps its
#: inputs' shapes itself (``Node.shapes``). One entry a tensor however many changes it has;
#: empty in most programs, where Node tests it once.
SHAPES_BEFORE: dict[int, tuple] = {}

#: The nodes whose output changed shape in place after they made it, by id: (a weak
#: reference to the node, its output's shape as made) (:func:`note_reshaped_output`): the
#: gradient a consumer hands such a node is summed into that shape, and refused where it
#: cannot be, as PyTorch checks each gradient against its next node's input metadata. A
#: plain dict: the engine tests it once an edge.
RESHAPED_OUTPUTS: dict[int, tuple] = {}


def note_reshaped_output(node: Node, shape: tuple) -> None:
    """Note that ``node`` made its output in ``shape``, before a first in-place change of
    that output's shape."""
    key = id(node)
    entry = RESHAPED_OUTPUTS.get(key)
    if entry is None or entry[0]() is not node:
        ref = weakref.ref(node, lambda r, key=key: _forget_reshaped(r, key))
        RESHAPED_OUTPUTS[key] = (ref, shape)


def _forget_reshaped(ref: weakref.ref, key: int) -> None:
    entry = RESHAPED_OUTPUTS.get(key)
    if entry is not None and entry[0] is ref:
        del RESHAPED_OUTPUTS[key]


def output_shape_made(node: Node) -> tuple | None:
    """The shape ``node`` made its output in, where that output's shape changed in place
    since (:data:`RESHAPED_OUTPUTS`), else None."""
    entry = RESHAPED_OUTPUTS.get(id(node))
    return entry[1] if entry is not None and entry[0]() is node else None


def recorded_shape(t: Any, node: Node) -> tuple:
    """The shape that ``t``, an input of ``node``, had when ``node`` was recorded: its shape
    now unless it changed shape in place since (:data:`SHAPES_BEFORE`)."""
    shapes = getattr(node, "shapes", None)
    if shapes is None:
        first = SHAPES_BEFORE.get(id(t))
        if first is None:
            return t.shape
        for u, version in zip(node.inputs, node.versions):
            if u is t:  # (recorded at or before the version of its first change: that shape)
                return first[1] if version <= first[0] else t.shape
        return t.shape
    for u, shape in zip(node.inputs, shapes):
        if u is t:
            return shape
    return t.shape


#: id(leaf) -> a weak reference to its AccumulateGrad, while that has node hooks
#: (autograd/grad_fn.py): a node recorded on the leaf then holds it, as PyTorch's edge does.
HOOKED_ACCUMULATORS: dict[int, weakref.ref] = {}


def _hold_hooked(node: Node, inputs: tuple) -> None:
    held = []
    for t in inputs:
        ref = HOOKED_ACCUMULATORS.get(id(t))
        found = None if ref is None else ref()
        if found is not None and found.variable is t:
            held.append(found)
    if held:
        node.accumulators = tuple(held)


class Node:
    __slots__ = (
        "op", "inputs", "parents", "versions", "epoch", "saved", "retained", "label", "view",
        "keeps_saved", "edges", "operands", "accumulators", "metadata", "made", "shapes",
        "__weakref__",
    )  # fmt: skip
    # ``operands``, set only on the last node of a loss whose PyTorch node saves the loss's
    # inputs (nn/functional/loss.py ``_saving``) and on a node that saves an integer input
    # (:func:`saves_integer_input`): references to them (called to read one) with their
    # versions, checked by the engine as PyTorch checks its saved variables. Unset elsewhere.
    # ``edges`` is set only on the last node of a composite (``ops.apply.labelled``): where
    # the gradient of each of the composite's inputs goes (a node, a leaf, or None), for
    # node hooks that see the composite as PyTorch's one node (autograd/composite_hooks.py).
    # None elsewhere (readers use getattr: a node made otherwise, a tw.compile replay's, may
    # lack it): backward reads it on every node it frees, and an unset slot read through
    # getattr costs a caught AttributeError (~1 us) where the store costs ~0.05 us a node.
    # ``accumulators``: the AccumulateGrad objects of its leaf inputs that it holds, as
    # PyTorch's edges hold them (autograd/grad_fn.py): set where one was asked for, unset else.
    # ``metadata``: its ``grad_fn.metadata`` dict, set when first asked for.
    # ``made``: set only on the node of a backend's whole linalg call (linalg/fused.py): the
    # arrays of the call's outputs, each as it returned it or as a write through ``.data``
    # replaced it (:func:`_fused_output_rewritten` writes only those into its record).
    # ``shapes``: its inputs' shapes as recorded, set only where one of them had changed shape
    # in place before (:data:`SHAPES_BEFORE`; :func:`recorded_shape` reads it).

    def __init__(self, op: str, inputs: tuple, saved: Any) -> None:
        if INVALID_HISTORIES:  # (one test of an empty dict a node: most programs have none)
            _refuse_invalid_histories(inputs)
        if STALE_VIEWS:  # (its edges are the rebuilt nodes of views a write missed, as torch's)
            regenerate_inputs(inputs)
        if SHAPES_BEFORE:  # (an input may have changed shape in place: its shape as recorded)
            for t in inputs:
                if id(t) in SHAPES_BEFORE:
                    self.shapes = tuple([u._shape for u in inputs])
                    break
        self.op = op
        self.inputs = inputs
        # Plain loops: generator expressions cost three times as much for two inputs.
        parents = []
        versions = []
        inference = False
        for t in inputs:
            node = t._node
            parents.append(node if node is not None else (t if t._requires_grad else None))
            versions.append(t._version)
            if t._inference:  # (one flag read: made under inference_mode, or a view of such)
                inference = True
        self.parents = tuple(parents)
        self.versions = tuple(versions)
        if op in SHAPE_ONLY_OPS:
            if op in SAVES_INDEX and saved[1]._inference:
                refuse_saved(op, saved[1])
            # InputShape(t) for each, its fields set here from the slots (inputs are Tensors
            # here): 0.1 us an input where the call costs 0.2, on every add, reshape, relu...
            shapes = []
            for t in inputs:
                kept = _new_input_shape(InputShape)
                kept.shape, kept.dtype, kept.backend = t._shape, t._dtype, t.backend
                kept._version = t._version
                shapes.append(kept)
            self.inputs = tuple(shapes)
        self.epoch = INPLACE_CHANGES[0]
        self.saved = saved
        if inference:
            _check_not_saved(self)
        self.retained = None  # a weak reference to the output, set by Tensor.retain_grad()
        self.label = None  # PyTorch's grad_fn name for the composite op this node ends
        self.view = None  # its grad_fn object (autograd/grad_fn.py), made when first asked for
        self.keeps_saved = False  # backward leaves what it holds: see frees_nothing
        self.edges = None
        if HOOKED_ACCUMULATORS:  # (a leaf's accumulator with hooks: this graph holds it too)
            _hold_hooked(self, inputs)
        if SAVED_TENSORS_HOOKS and op != "function" and op != "fused":
            from tensorweaver.autograd.graph import pack_inputs

            pack_inputs(self)

    @property
    def name(self) -> str:
        """PyTorch's name for this node as a ``grad_fn`` (``MulBackward0``)."""
        return grad_fn_name(self)

    def output(self, native: Any, dtype: Any = None) -> Any:
        """The output tensor, rebuilt around its saved array, still attached to this node (of
        ``dtype``, where given: an output whose dtype is not its first input's)."""
        global _Tensor
        if _Tensor is None:  # (imported once: tensor.py imports this module)
            from tensorweaver.tensor import Tensor as _Tensor

        first = self.inputs[0]
        out = _Tensor(native, first.backend, first.dtype if dtype is None else dtype)
        out._node = self
        out._requires_grad = True
        if is_grad_enabled():  # (a create_graph backward: the nodes it records may keep it)
            made = OUTPUT_TENSORS.get(self)
            if made is None:
                made = OUTPUT_TENSORS[self] = []
            elif len(made) >= 8:  # (a graph differentiated again and again: the dead go)
                made[:] = [ref for ref in made if ref() is not None]
            made.append(weakref.ref(out))
        return out

    def release(self) -> None:
        """Drop what backward saved; a later backward through here is an error, unless the
        node saved no tensor (as PyTorch frees saved tensors only: ``(x + 1).sum()`` and
        ``x.mean()`` can run backward twice, ``x.exp()`` and ``x * 2`` cannot)."""
        if self.op in SHAPE_ONLY_OPS and _no_data(self.saved):
            return  # its inputs are InputShapes already: nothing to free (its name needs them)
        if self.keeps_saved:
            return  # (one node of PyTorch's that saves numbers only: see frees_nothing)
        if self.op == "remainder" and _reads_no_value(self):  # (the test: a cheap first one)
            # only the inputs' shapes are left, as the node's name needs
            self.inputs = _shapes_of(self.inputs)
            return
        if self.label is None and self.op in BY_OPERANDS:  # its name needs the operands
            self.label = grad_fn_name(self)
        if self.label in _MEAN_LABELS and self.op == "div" and self.parents[1] is None:
            # PyTorch's MeanBackward keeps the count, not the sum: keep the 0-d divisor.
            self.inputs = (InputShape(self.inputs[0]), self.inputs[1])
            return
        if self.op == "function":
            self._release_function()
            return
        # PyTorch's node keeps its edges (its grad_fn's next_functions) and frees only what
        # it saved: they stay in ``edges`` (autograd/grad_fn.py ``kept_inputs``), with a
        # fused op's kernel, argument slots and input rank, which its next_functions need.
        fused = None
        if self.op == "fused":
            fused = (self.saved[0], self.saved[4], len(self.inputs[0].shape))
        edges = getattr(self, "edges", None)
        if edges is not None and len(edges) < len(self.parents):
            from tensorweaver.autograd.grad_fn import shows_own_inputs

            # (whether its label names its own op, its inputs then PyTorch's, may need its
            # operands for its name: told before they go)
            if shows_own_inputs(self):
                edges = None
        self.edges = (self.parents, edges, fused)
        self.inputs, self.parents, self.saved = None, None, None

    def _release_function(self) -> None:
        """An autograd.Function's node keeps its place in the graph and its ctx, as
        PyTorch's: a backward that reads no saved tensor may run again (and one that does
        raises, once the engine frees the ctx's saved tensors at the end of the pass:
        ``FunctionCtx._release``). Its inputs and the values forward returned go: only their
        shapes, dtypes and devices are kept (the other outputs' zero gradients)."""
        cls, ctx, args, index, outputs = self.saved
        if args is None:
            return  # one output's node (see output_node): it holds no tensor
        self.inputs = tuple([InputShape(t) for t in self.inputs])
        self.saved = (cls, ctx, _shapes_of(args), index, _shapes_of(outputs))

    def __repr__(self) -> str:
        return f"<{self.name}>"


_new_node = Node.__new__
