"""What ``Tensor.grad_fn`` returns: PyTorch's face of a graph node.

PyTorch hands out one object per node whose class is named after the op
(``type(y.grad_fn).__name__ == "MulBackward0"``), with ``name()``, ``next_functions`` (the
producers of the node's inputs, leaves as ``AccumulateGrad``) and a ``metadata`` dict. Graph
printers (torchviz and the like) walk exactly that, so the core gives the same objects; the
node itself stays a plain slotted record that the engine reads without indirection.
"""

from __future__ import annotations

import math
import operator
import weakref
from functools import partial
from typing import Any, Callable

from tensorweaver.autograd.hooks import NODE_POSTHOOKS, NODE_PREHOOKS, _replaced
from tensorweaver.autograd.names import BY_OPERANDS, grad_fn_name
from tensorweaver.autograd.node import (
    HOOKED_ACCUMULATORS,
    SAVED_TENSOR_FREED,
    ViewChange,
    output_nr,
)
from tensorweaver.ops.composite import (
    CONVOLUTION_SAVED,
    REFERENCE_OF,
    convolution_saved,
    fill_slots,
)

_CLASSES: dict[str, type] = {}

#: PyTorch's nodes with several differentiable outputs (one gradient each in a pre-hook's
#: ``grad_outputs``) that the core builds as a composite of one node per output.
_SEVERAL_OUTPUTS = frozenset(
    (
        "UnbindBackward0", "SplitBackward0", "SplitWithSizesBackward0",
        "LinalgEighBackward0", "LinalgEigBackward0",
        "LinalgSvdBackward0", "LinalgQrBackward0", "LinalgSlogdetBackward0",
        "LinalgLuBackward0", "LinalgLstsqBackward0", "NativeGroupNormBackward0",
    )
)  # fmt: skip

#: Renamed primitives that are the whole op PyTorch names (its inputs, its rule): a view
#: made as a permute or reshape, sort's gather of its input, a piecewise-linear activation, a
#: tensor minus a 0-d tensor (names.py takes that 0-d tensor for a Python number).
_ONE_STEP = frozenset(
    (
        ("permute", "TBackward0"), ("permute", "TransposeBackward0"),
        ("reshape", "UnsqueezeBackward0"), ("reshape", "SqueezeBackward0"),
        ("reshape", "SqueezeBackward1"), ("gather", "SortBackward0"),
        ("piecewise_linear", "LeakyReluBackward0"), ("piecewise_linear", "HardtanhBackward0"),
        ("sub", "SubBackward0"),
    )
)  # fmt: skip

#: The names of fused ops whose PyTorch node is one step of them, with other inputs: the
#: addmm or mm of linear (bias, input, weight.T), its batched view, cross-entropy's nll_loss (of
#: log_softmax's output), a 1-D pool's squeeze, dropout's mul, instance norm's view.
_FUSED_PARTS = frozenset(
    (
        "AddmmBackward0", "MmBackward0", "ViewBackward0", "NllLossBackward0", "NllLoss2DBackward0",
        "SqueezeBackward1", "MulBackward0",
    )
)  # fmt: skip


#: Where PyTorch's node leaves out an operand the primitive has (a Python scalar), by node
#: name: the positions of the inputs it keeps.
_SCALAR_LEFT_OUT = {
    "PowBackward0": (0,), "PowBackward2": (1,), "RsubBackward1": (1,),
    "RemainderBackward0": (0,), "CopysignBackward1": (0,),
    "XlogyBackward1": (1,), "XlogyBackward2": (0,),
    "SpecialXlog1PyBackward1": (1,), "SpecialXlog1PyBackward2": (0,),
    "SpecialZetaBackward1": (1,), "SpecialZetaBackward2": (0,),
}  # fmt: skip


def shown_inputs(node: Any) -> Any:
    """The positions of ``node``'s inputs that PyTorch's node has (its ``next_functions``,
    one gradient each in its hooks), or None for all: ``where`` leaves out its condition,
    ``ctc_loss`` its targets and lengths, and a few nodes a Python scalar operand."""
    name = node.name
    if name == "WhereBackward0":  # (not a composite ending in a where: copysign, fmod)
        return (1, 2)
    if name == "CtcLossBackward0":  # (PyTorch's has one input: the log-probabilities)
        return (0,)
    return _SCALAR_LEFT_OUT.get(name)


def pytorch_inputs(node: Any) -> tuple | None:
    """What feeds each input of PyTorch's node for ``node`` (before :func:`shown_inputs`): a
    node, a leaf that requires grad, or None (no gradient); None once backward freed it. A
    composite's are the edges ``ops.apply.labelled`` recorded, a fused op's its parents with
    None for each optional argument not given (a bias)."""
    if type(node.view) is type(node):  # one output of a node of several: that node's
        return pytorch_inputs(node.view)
    parents = node.parents
    if parents is None:
        return None
    if node.op == "fused":
        edges = getattr(node, "edges", None)  # (an unbatched cross-entropy's: loss.py)
        if edges is not None:
            return edges
        slots = node.saved[4]
        return parents if slots is None else fill_slots(slots, parents)
    edges = getattr(node, "edges", None)  # (a node replayed by tw.compile has none)
    return parents if edges is None or shows_own_inputs(node) else through_views(edges)


def kept_inputs(node: Any) -> tuple | None:
    """:func:`pytorch_inputs`, also once backward freed ``node``: PyTorch's node keeps its
    edges then (``Node.release`` keeps them apart); None for a node that kept none (a
    tw.compile replay's result of a freed graph)."""
    if type(node.view) is type(node):
        return kept_inputs(node.view)
    if node.parents is not None:
        return pytorch_inputs(node)
    freed = getattr(node, "edges", None)
    if freed is None:
        return None
    parents, edges, fused = freed
    if edges is not None:
        return through_views(edges)
    return parents if fused is None or fused[1] is None else fill_slots(fused[1], parents)


def through_views(edges: tuple) -> tuple:
    """``edges`` with the :class:`ViewChange` that ends those of a view's write-back into its
    base replaced by the edges it stands for: those of PyTorch's node for the op that changed
    the view, but its first (that node's own write-back's, in turn, where it changed a view
    of a view)."""
    if not edges or type(edges[-1]) is not ViewChange:
        return edges
    changed = edges[-1].node
    inputs = kept_inputs(changed)
    if inputs is None:  # (a tw.compile replay of a freed graph kept none)
        return edges[:-1]
    shown = shown_inputs(changed)
    if shown is not None:
        inputs = tuple([inputs[i] for i in shown])
    return (*edges[:-1], *inputs[1:])


def _select_saved(i: int) -> Callable[[Any], Any]:
    """A reader of item ``i`` of a select node's ``(axis, index)`` (a slice node that dropped
    its axis: ops/index.py), as given, a negative one as PyTorch shows it: read as unsigned
    64 bits; None for a slice node of another kind."""
    return lambda node: node.saved[i] % _UINT64 if len(node.saved) == 2 else None


_UINT64 = 1 << 64


def _cut_sizes(node: Any) -> Any:
    """The sizes of the tensor a select or slice node cut, PyTorch's ``self_sym_sizes``;
    None for a node that is not PyTorch's select or slice."""
    if node.op == "slice" and len(node.saved) == 2 or _slice_argument(node, 0) is not None:
        return tuple(node.inputs[0].shape)
    return None


def _slice_argument(node: Any, i: int) -> Any:
    """Item ``i`` of PyTorch's ``(dim, start, end, step)`` of a slice node (not a select's):
    as indexing gave them (ops/views.py), else (narrow, split's pieces) those of the one axis
    it cuts; None where it cuts several (PyTorch's would be several nodes)."""
    from tensorweaver.ops.views import SLICE_ARGUMENTS, slice_arguments

    made = SLICE_ARGUMENTS.get(node)
    if made is not None:
        given = slice_arguments(*made)
        return None if given is None else given[i]
    if node.op != "slice" or len(node.saved) != 3:
        return None
    starts, stops, steps = node.saved
    shape = node.inputs[0].shape
    cut = [a for a, n in enumerate(shape) if starts[a] or stops[a] != n or steps[a] != 1]
    if len(cut) != 1:
        return None
    a = cut[0]
    return (a, starts[a], stops[a], steps[a])[i]


def _index_sizes(node: Any) -> Any:
    """The sizes of the tensor an index node (``x[t]``'s IndexBackward0, a take or the
    reshape after it) indexed: those of ``x``'s basic indexing's result; else, for a
    reshape node, :func:`_cut_sizes`."""
    from tensorweaver.ops.index import INDEX_ARGUMENTS

    made = INDEX_ARGUMENTS.get(node)
    if made is not None:
        return tuple(made[2])
    return None if node.op == "take" else _cut_sizes(node)


#: PyTorch's nodes of a reshape that save the input's sizes (an unsqueeze's saves none).
_SIZES_SAVED = frozenset(
    ("ViewBackward0", "UnsafeViewBackward0", "SqueezeBackward0", "SqueezeBackward1")
)


def _reshape_sizes(node: Any) -> Any:
    """The sizes of a reshape node's input where PyTorch's node saves them: a view's or
    squeeze's (kept after backward: the node holds shapes only), an index's or a slice's
    made of a reshape (:func:`_index_sizes`); else None."""
    found = _index_sizes(node)
    if found is None and node.inputs is not None and grad_fn_name(node) in _SIZES_SAVED:
        return tuple(node.inputs[0].shape)
    return found


def _expanded_sizes(node: Any) -> Any:
    """The sizes of an expand's input, PyTorch's ExpandBackward0 ``self_sym_sizes``."""
    return None if node.inputs is None else tuple(node.inputs[0].shape)


def _index_indices(node: Any) -> Any:
    """The index tensors an index node saves, PyTorch's ``indices`` (ops/index.py
    ``pytorch_indices``); PyTorch's error once backward freed them; None for another node."""
    from tensorweaver.ops.index import INDEX_ARGUMENTS, pytorch_indices

    made = INDEX_ARGUMENTS.get(node)
    if made is None:
        return None
    take = node if node.op == "take" or node.parents is None else node.parents[0]
    if take.parents is None:  # (the take node saves them: a reshape over it saves nothing)
        raise RuntimeError(SAVED_TENSOR_FREED)
    index, ndim, _ = made
    return pytorch_indices(index, ndim, take.inputs[0])


#: The arguments that the gradient of a select, slice or index (``x[t]``) recorded with
#: create_graph saves (PyTorch's SelectBackwardBackward0, SliceBackwardBackward0,
#: IndexPutImplBackward0: the forward node's), by that gradient's node.
BACKWARD_ARGUMENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CUT_ARGUMENTS = ("_saved_dim", "_saved_index", "_saved_start", "_saved_end", "_saved_step")


def note_backward_arguments(node: Any, forward: Any) -> None:
    """Note that ``node``, the gradient of ``forward``'s select, slice or index recorded
    with create_graph, saves the arguments ``forward`` shows (an index: its indices, and
    ``accumulate``, True)."""
    shown = GradFn(forward)
    if forward.op == "take":
        BACKWARD_ARGUMENTS[node] = {
            "_saved_indices": shown._saved_indices,
            "_saved_accumulate": True,
        }
        return
    BACKWARD_ARGUMENTS[node] = {a: getattr(shown, a) for a in _CUT_ARGUMENTS if hasattr(shown, a)}


def _backward_argument(node: Any, attribute: str) -> Any:
    """An argument a select's, slice's or index's create_graph gradient node saves (see
    :data:`BACKWARD_ARGUMENTS`); else None."""
    return BACKWARD_ARGUMENTS.get(node, {}).get(attribute)


#: The widths of F.pad's node (PyTorch's ConstantPadNdBackward0 ``_saved_pad``, its
#: ReflectionPad and ReplicationPad nodes' ``_saved_padding``) as given: (attribute, widths)
#: by a weak reference to the node.
PAD_WIDTHS: dict[weakref.ref, tuple] = {}


def note_pad_widths(node: Any, attribute: str, widths: Any) -> None:
    """Note that ``node``, F.pad's, saves ``widths`` as PyTorch's node's ``attribute``."""
    PAD_WIDTHS[weakref.ref(node, PAD_WIDTHS.pop)] = (attribute, tuple(widths))


def _pad_widths(node: Any, attribute: str) -> Any:
    """F.pad's widths where ``node`` saves them as ``attribute`` (:data:`PAD_WIDTHS`), a
    negative one as PyTorch shows it: read as unsigned 64 bits; else None."""
    noted = PAD_WIDTHS.get(weakref.ref(node))
    if noted is None or noted[0] != attribute:
        return None
    return tuple([operator.index(w) % _UINT64 for w in noted[1]])


def _unbind_dim(node: Any) -> Any:
    """The axis of an unbind's node (ops/several_outputs.py), whose pieces dropped it, as
    given (a negative one read as unsigned 64 bits, as PyTorch shows it)."""
    from tensorweaver.ops.several_outputs import _Pieces

    saved = node.saved
    return saved[1].dim % _UINT64 if saved and saved[0] is _Pieces and saved[1].stacked else None


def _reshape_dim(node: Any) -> Any:
    """The dim of an unsqueeze's node as given (ops/movement.py; a negative one as unsigned
    64 bits, as PyTorch shows it), else that of the slice a reshape node stands for."""
    from tensorweaver.ops.movement import UNSQUEEZE_DIMS

    dim = UNSQUEEZE_DIMS.get(weakref.ref(node))
    return _slice_argument(node, 0) if dim is None else int(dim) % _UINT64


#: PyTorch's saved arguments of a node, by (op, attribute): what reads them off the node,
#: None where the node is not of PyTorch's kind that saves it. (Ints and shapes only: they
#: stay after backward, as PyTorch's.)
_SAVED: dict[tuple[str, str], Callable[[Any], Any]] = {
    ("slice", "_saved_dim"): lambda node: (
        node.saved[0] % _UINT64 if len(node.saved) == 2 else _slice_argument(node, 0)
    ),
    ("slice", "_saved_start"): partial(_slice_argument, i=1),
    ("slice", "_saved_end"): partial(_slice_argument, i=2),
    ("slice", "_saved_step"): partial(_slice_argument, i=3),
    ("slice", "_saved_index"): _select_saved(1),
    # (x[:], x[None, 1:3]: PyTorch's slice node, made here with a reshape over it or none)
    ("reshape", "_saved_dim"): _reshape_dim,
    ("reshape", "_saved_start"): partial(_slice_argument, i=1),
    ("reshape", "_saved_end"): partial(_slice_argument, i=2),
    ("reshape", "_saved_step"): partial(_slice_argument, i=3),
    ("slice", "_saved_self_sym_sizes"): _cut_sizes,
    ("reshape", "_saved_self_sym_sizes"): _reshape_sizes,
    ("expand", "_saved_self_sym_sizes"): _expanded_sizes,
    ("function", "_saved_dim"): _unbind_dim,
    ("take", "_saved_self_sym_sizes"): _index_sizes,
    ("take", "_saved_indices"): _index_indices,
    ("reshape", "_saved_indices"): _index_indices,
    **{("identity", a): partial(_backward_argument, attribute=a) for a in _CUT_ARGUMENTS},
    ("scatter_add", "_saved_indices"): partial(_backward_argument, attribute="_saved_indices"),
    ("scatter_add", "_saved_accumulate"): partial(
        _backward_argument, attribute="_saved_accumulate"
    ),
    # (a convolution's tensors too: PyTorch's RuntimeError once backward freed them)
    **{
        (op, name): partial(convolution_saved, attribute=name)
        for op in ("fused", "function")
        for name in CONVOLUTION_SAVED
    },
}

#: The attributes F.pad's nodes save (:func:`_pad_widths`), whatever op made the node.
_PAD_ATTRIBUTES = frozenset(("_saved_pad", "_saved_padding"))


class SavedTensor:
    """One tensor a node saves, as PyTorch's ``_raw_saved_*`` gives it: ``data`` (and
    ``unpack()``) is the tensor, None for an entry of a saved list that is no tensor;
    PyTorch's error once backward freed it."""

    __slots__ = ("_value", "_freed")

    def __init__(self, value: Any, freed: bool = False) -> None:
        self._value, self._freed = value, freed

    @property
    def data(self) -> Any:
        if self._freed:
            raise RuntimeError(SAVED_TENSOR_FREED)
        return self._value

    def unpack(self) -> Any:
        return self.data

    @property
    def unpack_hook(self) -> None:
        """The unpack hook :meth:`register_hooks` set: never one here."""
        return None

    def register_hooks(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        """PyTorch's refusal for an entry that is no tensor; the core's nodes read their
        saved tensors where the op put them, so hooks on one are refused too."""
        if self._value is None and not self._freed:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor with value None is forbidden"
            )
        raise NotImplementedError(
            "SavedTensor.register_hooks: tensorweaver's nodes read their saved tensors where "
            "the op kept them, so hooks set afterwards would not be called; record the op "
            "inside tw.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook) instead"
        )


def _raw_saved(grad_fn: GradFn, attribute: str) -> Any:
    """PyTorch's ``_raw_saved_*`` for the saved ``attribute`` of ``grad_fn``: a
    :class:`SavedTensor` for a tensor, a tuple of them for a list (IndexBackward0's
    indices); None where the node saves no tensors there."""
    try:
        found = getattr(grad_fn, attribute)
    except RuntimeError as error:
        # (freed by backward: PyTorch's object for one tensor stays, emptied; for a list,
        # its error)
        if str(error) != SAVED_TENSOR_FREED or attribute == "_saved_indices":
            raise
        return SavedTensor(None, True)
    except AttributeError:
        return None
    if isinstance(found, tuple) and attribute == "_saved_indices":
        return tuple([SavedTensor(e) for e in found])
    from tensorweaver.tensor import Tensor

    return SavedTensor(found) if isinstance(found, Tensor) else None


#: name() of PyTorch's hand-written nodes, by their class name.
_NAMESPACED = {
    "CopyBackwards": "torch::autograd::CopyBackwards",
    "CopySlices": "torch::autograd::CopySlices",
    "NotImplemented": "torch::autograd::NotImplemented",
}


class GradFn:
    """A graph node as PyTorch's ``grad_fn`` object; its class is named after the op."""

    __slots__ = ("_node", "__weakref__")

    def __init__(self, node: Any) -> None:
        self._node = node

    @property
    def metadata(self) -> dict:
        """A dict for the caller's use, kept with the node (this object may be made again:
        :func:`grad_fn_of`)."""
        node = self._node
        try:
            return node.metadata
        except AttributeError:
            node.metadata = {}
            return node.metadata

    def __getattr__(self, attribute: str) -> Any:
        """PyTorch's saved arguments (``_saved_dim``...), where the node keeps them
        (:data:`_SAVED`); asked only for an attribute the object lacks."""
        if attribute.startswith("_saved_"):
            node = self._node
            read = _SAVED.get((node.op, attribute))
            found = None if read is None else read(node)
            if found is None and attribute in _PAD_ATTRIBUTES:
                found = _pad_widths(node, attribute)
            if found is not None:
                return found
        if attribute.startswith("_raw_saved_"):
            found = _raw_saved(self, "_saved_" + attribute[11:])
            if found is not None:
                return found
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attribute}'")

    def name(self) -> str:
        name = self._node.name
        # (PyTorch's hand-written copy nodes have a namespaced name(); their class is not)
        return _NAMESPACED.get(name, name)

    @property
    def next_functions(self) -> tuple:
        """``(function, 0)`` per input of PyTorch's node (:func:`shown_inputs`): its
        producer's grad_fn, ``AccumulateGrad`` for a leaf that requires grad, None for an
        input that needs no gradient; kept once backward has freed the node, as PyTorch's."""
        node = self._node
        inputs = kept_inputs(node)
        if inputs is None:
            return ()
        _hold_accumulators(node, inputs)
        if node.op == "fused":
            kernel, rank = _fused_kind(node)
            if kernel in _FUSED_STEPS:
                return _FUSED_STEPS[kernel](rank, inputs)
            if kernel == "dropout":  # (PyTorch's node: the mul by the mask, no gradient there)
                inputs = (*inputs, None)
        elif node.label is not None and node in REFERENCE_OF:
            kernel, rank = REFERENCE_OF[node]
            if kernel in _FUSED_STEPS:  # (the composite's inputs: the edges labelled set)
                edges = node.edges if node.parents is not None else node.edges[1]
                return _FUSED_STEPS[kernel](rank, edges)
        functions = [(_function_of(p), output_nr(p)) for p in inputs]
        if node.op in ("real", "imag"):  # (PyTorch's: a select of the input's view_as_real)
            functions = [_step("ViewAsRealBackward0", functions[0])]
        shown = shown_inputs(node)
        return tuple(functions if shown is None else [functions[i] for i in shown])

    def register_prehook(self, fn: Callable) -> Any:
        """Call ``fn(grad_outputs)`` before this node's backward runs; a tuple it returns
        replaces ``grad_outputs``. Returns a handle whose ``remove()`` unregisters it.
        RuntimeError on an op of several outputs built with a node per output (unbind)."""
        from tensorweaver.autograd.hooks import register_node_hook

        node = self._node
        if node.label in _SEVERAL_OUTPUTS and not _whole(node):
            why = "this op's outputs have a node each here, where PyTorch's one node gets them all"
            _refuse(node, "register_prehook", why, "each output")
        return register_node_hook(node, fn, prehook=True)

    def register_hook(self, fn: Callable) -> Any:
        """Call ``fn(grad_inputs, grad_outputs)`` after this node's backward ran (one
        gradient per input, None where it needs none); a tuple it returns replaces
        ``grad_inputs``. Returns a handle whose ``remove()`` unregisters it. On the last node
        of a composite (gelu, mean, mse_loss...), ``grad_inputs`` are the gradients of the
        whole op's inputs, as PyTorch's; RuntimeError where they cannot be (see
        autograd/composite_hooks.py) or where a fused op's PyTorch node is one step of it."""
        from tensorweaver.autograd.composite_hooks import inner_nodes, register_composite_hook
        from tensorweaver.autograd.hooks import register_node_hook

        node = self._node
        if _whole(node):
            slots = node.saved[4] if node.op == "fused" and node.parents is not None else None
            hook = fn if slots is None else _in_slots(fn, slots)
            return register_node_hook(node, hook, prehook=False)
        if node.op == "fused":
            hook = _on_pytorch_step(node, fn)
            if hook is not None:
                return register_node_hook(node, hook, prehook=False)
            why = "PyTorch's node for this op is one step of it, with other inputs"
        else:
            edges = getattr(node, "edges", None)
            if edges and type(edges[-1]) is ViewChange:  # (the composite's inputs, in full)
                node.edges = through_views(edges)
            why = inner_nodes(node)
            if type(why) is list:
                return register_composite_hook(node, fn)
            hook = _by_edges(node, fn)
            if hook is not None:
                return register_node_hook(node, hook, prehook=False)
        _refuse(node, "register_hook", why, "the op's inputs")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"


class _Step:
    """One of PyTorch's nodes that a fused op here computes inside its one node (a fused
    linear's ``TBackward0`` of its weight): its name and ``next_functions``, for what walks
    the graph. Its class is named after it."""

    __slots__ = ("next_functions", "metadata")

    def __init__(self, *functions: tuple) -> None:
        self.next_functions = functions
        self.metadata: dict = {}

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"


_STEPS: dict[str, type] = {}


def _step(name: str, *functions: tuple) -> tuple:
    """``(PyTorch's node name over functions, 0)``, functions as in ``next_functions``;
    ``(None, 0)`` where its one input needs no gradient (PyTorch's view or transpose of such
    a tensor has no node either)."""
    if len(functions) == 1 and functions[0][0] is None:
        return None, 0
    cls = _STEPS.get(name)
    if cls is None:
        cls = _STEPS[name] = type(name, (_Step,), {"__slots__": ()})
    return cls(*functions), 0


def _fused_kind(node: Any) -> tuple:
    """A fused ``node``'s kernel name and its first input's rank (kept once it is freed)."""
    if node.parents is None:
        kernel, _, rank = node.edges[2]
        return kernel, rank
    return node.saved[0], len(node.inputs[0].shape)


def _linear_functions(rank: int, inputs: tuple) -> tuple:
    """A fused linear's ``next_functions`` as PyTorch's graph has them: ``addmm(bias, input,
    weight.t())``, with the input flattened to rows and the result viewed back where it is not
    a matrix (names.py ``composite_name`` names that view)."""
    x, weight, bias = ((_function_of(p), output_nr(p)) for p in inputs)
    weight = _step("TBackward0", weight)
    if rank == 2:
        return bias, x, weight
    return (_step("AddmmBackward0", bias, _step("ViewBackward0", x), weight),)


def _cross_entropy_functions(rank: int, inputs: tuple) -> tuple:
    """A fused cross-entropy's ``next_functions`` as PyTorch's graph has them: its nll step's
    one input, log_softmax of the logits, viewed as images where they are not 2-D or 4-D."""
    (logits, _) = inputs  # (the class indices: no gradient, no entry in PyTorch's node)
    steps = _step("LogSoftmaxBackward0", (_function_of(logits), output_nr(logits)))
    if rank not in (2, 4):
        steps = _step("ViewBackward0", steps)
    return (steps,)


def _instance_norm_functions(rank: int, inputs: tuple) -> tuple:
    """A fused instance norm's ``next_functions`` as PyTorch's graph has them (its node is
    the view back of a batch norm of the input seen as one sample, whose weight and bias are
    repeated per sample)."""
    x, weight, bias = ((_function_of(p), output_nr(p)) for p in inputs)
    x = _step("ViewBackward0", x)
    weight, bias = _step("RepeatBackward0", weight), _step("RepeatBackward0", bias)
    return (_step("NativeBatchNormBackward0", x, weight, bias),)


#: Fused kernels whose PyTorch graph has several nodes: their ``next_functions`` by kernel.
_FUSED_STEPS = {
    "linear": _linear_functions,
    "cross_entropy": _cross_entropy_functions,
    "cross_entropy_nd": _cross_entropy_functions,
    "instance_norm": _instance_norm_functions,
}


class AccumulateGrad:
    """The end of a path in the graph: where a leaf's gradient is accumulated into ``.grad``.
    One per leaf while it is held (:func:`_function_of`); it holds its leaf, as PyTorch's."""

    __slots__ = ("variable", "metadata", "__weakref__")

    def __init__(self, variable: Any) -> None:
        self.variable = variable
        self.metadata: dict = {}

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    @property
    def next_functions(self) -> tuple:
        return ()

    def register_prehook(self, fn: Callable) -> Any:
        """Call ``fn((gradient,))`` with the leaf's gradient (its tensor hooks run) before it
        is accumulated; a tuple it returns replaces it. Returns a handle whose ``remove()``
        unregisters it. Kept while this object lives (:meth:`_hooked`)."""
        from tensorweaver.autograd.hooks import register_node_hook

        self._hooked()
        return register_node_hook(self.variable, fn, prehook=True)

    def register_hook(self, fn: Callable) -> Any:
        """Call ``fn((), (gradient,))`` once the leaf's gradient has been accumulated (after
        its post-accumulate hooks). Returns a handle whose ``remove()`` unregisters it."""
        from tensorweaver.autograd.hooks import register_node_hook

        self._hooked()
        return register_node_hook(self.variable, fn, prehook=False)

    def _hooked(self) -> None:
        """Tie the node hooks (kept by the leaf's id) to this object's life, as PyTorch's
        belong to its AccumulateGrad: held by the graphs that reach the leaf (recorded later
        too: :data:`HOOKED_ACCUMULATORS`) and by the caller, weakly by the leaf, so a freed
        one takes its hooks along and the next graph gets a fresh one. (This object holds
        the leaf: its id is no other tensor's until the hooks are dropped.)"""
        key = id(self.variable)
        ref = HOOKED_ACCUMULATORS.get(key)
        if ref is None or ref() is not self:
            HOOKED_ACCUMULATORS[key] = weakref.ref(self)
            weakref.finalize(self, _drop_hooks, key)

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


def grad_fn_of(node: Any) -> GradFn:
    """The one ``grad_fn`` object of ``node`` (made on first use, kept on the node; weakly on
    a node that holds AccumulateGrad objects, :func:`_hold_accumulators`)."""
    view = node.view
    if type(view) is type(node):  # one output of a node of several: that node's (output_node)
        return grad_fn_of(view)
    if type(view) is weakref.ReferenceType:
        view = view()
    if view is None:
        name = node.name
        cls = _CLASSES.get(name)
        if cls is None:
            cls = _CLASSES[name] = type(name, (GradFn,), {"__slots__": ()})
        view = cls(node)
        node.view = weakref.ref(view) if getattr(node, "accumulators", None) else view
    return view


def _whole(node: Any) -> bool:
    """Whether ``node``'s own rule is PyTorch's node: a primitive, a fused op whose PyTorch
    node is the whole op or an autograd.Function, not the last step of a composite that
    ``ops.apply.labelled`` named. A label names either the node's own op (its primitive's
    name, or an autograd.Function over the op's inputs): the node is PyTorch's, unless it has
    inputs PyTorch's lacks (:func:`_inputs_beside`); or a composite ending here, or another
    overload of the op: PyTorch's node has the inputs the label recorded."""
    label = node.label
    if node.parents is None:  # (released by backward: it runs no more, nor its hooks)
        return True
    if node.op == "fused":
        return grad_fn_name(node) not in _FUSED_PARTS
    if label is None or (node.op, label) in _ONE_STEP:
        return True
    edges = getattr(node, "edges", None)
    if edges is None:  # (a node replayed by tw.compile has none)
        return node.op == "function" or _own_name(node) == label
    if not _names_own_op(node, edges):
        return False
    return not _inputs_beside(edges, node.parents)


def shows_own_inputs(node: Any) -> bool:
    """Whether PyTorch's node for the labelled ``node`` (not yet released) has the node's own
    inputs, not those its label recorded (:func:`pytorch_inputs`: a fused op's recorded ones
    are PyTorch's)."""
    return node.op != "fused" and _whole(node)


def _own_name(node: Any) -> str:
    """``node``'s primitive's own name, read with its label set aside (kept per op where it
    does not depend on the operands: asked once per backward of a dropout)."""
    op = node.op
    name = _OWN_NAMES.get(op)
    if name is not None:
        return name
    label = node.label
    node.label = None
    try:
        name = grad_fn_name(node)
    finally:
        node.label = label
    if op not in BY_OPERANDS:
        _OWN_NAMES[op] = name
    return name


#: The own name of each op met whose name does not depend on its operands.
_OWN_NAMES: dict[str, str] = {}


def _names_own_op(node: Any, edges: tuple) -> bool:
    """Whether ``node``'s label names its own op: its primitive's name (dropout's mul by its
    mask), or, for an autograd.Function (whose own name is its class's, never PyTorch's), a
    label over inputs all of which that needs a gradient are the Function's (ctc_loss's; not
    dist's, whose recorded inputs are those of the subtraction before its norm)."""
    if node.op != "function":
        return _own_name(node) == node.label
    parents = node.parents
    return all(e is None or any(e is p for p in parents) for e in edges)


def _inputs_beside(edges: tuple, parents: tuple) -> bool:
    """Whether a node whose label names its own op has inputs PyTorch's node (over the
    recorded ``edges``) lacks: the recorded inputs line up with the node's own, each the
    node's input at its place or what a reshape there was made of (PyTorch's op reads it as
    it is, and then lacks the reshape), and the node has more inputs besides that need a
    gradient (an output the composite made: index_reduce's). (More inputs that need none are
    PyTorch's too: a mask a mul takes, None in its ``next_functions``.)"""
    if len(edges) > len(parents):
        return False
    beside = False
    for i in range(len(edges), len(parents)):
        if parents[i] is not None:
            beside = True
    for edge, parent in zip(edges, parents):
        if edge is parent:
            continue
        above = parent.parents if getattr(parent, "op", None) == "reshape" else None
        if not above or above[0] is not edge:  # (None too: freed by a backward through it)
            return False
        beside = True
    return beside


def _on_pytorch_step(node: Any, hook: Callable) -> Callable | None:
    """``hook`` on a fused ``node`` as on PyTorch's node for its last step, where that step
    can be shown (cross-entropy's nll of log_softmax's output, the views that end instance
    norm, a linear's addmm or its view), else None."""
    from tensorweaver.autograd.composite_hooks import log_probability_hook, view_hook

    kernel, x = node.saved[0], node.inputs[0]
    if kernel == "cross_entropy" or kernel == "cross_entropy_nd":
        return log_probability_hook(node, hook)
    if kernel == "instance_norm":
        return view_hook(node, hook, (1, x.shape[0] * x.shape[1], *x.shape[2:]))
    if kernel == "linear" and x.dim() != 2 and x.is_contiguous():
        weight, bias = node.inputs[1], node.inputs[2]
        if bias.is_contiguous():  # (the view of addmm's (rows, out) result; else PyTorch's
            # node is matmul's result plus the bias: AddBackward0)
            return view_hook(node, hook, (math.prod(x.shape[:-1]), weight.shape[0]))
    if kernel == "linear" and x.dim() == 2:
        return _as_addmm(hook)
    return None


def _as_addmm(hook: Callable) -> Callable:
    """``hook`` on a fused linear of a matrix (input, weight, bias) as on PyTorch's
    ``addmm(bias, input, weight.t())``: it sees those inputs' gradients, in that order, and
    what it returns is mapped back."""

    def as_addmm(grad_inputs: tuple, grad_outputs: tuple) -> tuple | None:
        x, weight, bias = grad_inputs
        seen = (bias, x, None if weight is None else weight.t())
        returned = hook(seen, grad_outputs)
        if returned is None:
            return None
        bias, x, weight = _replaced(hook, returned, seen)
        return x, None if weight is None else weight.t(), bias

    return as_addmm


#: Composites of one ``where(keep, value, prior)`` node (``ops/methods.py`` ``_overwritten``:
#: a copy or fill that overwrites a tensor, ``x.copy_(x)``) whose edges may be one tensor
#: twice: the input of that node behind each edge, by label.
_INPUT_OF_EDGE = {"CopyBackwards": (2, 1), "FillBackward3": (2, 1)}


def _by_edges(node: Any, hook: Callable) -> Callable | None:
    """``hook`` on such a one-node composite as on PyTorch's node: it sees the gradient of
    each edge (the overwritten tensor's zeros, then the source's), even where both edges are
    one tensor, and what it returns goes back to that input; None for other nodes."""
    inputs = _INPUT_OF_EDGE.get(node.label)
    if inputs is None or node.op != "where" or node.parents is None:
        return None
    if any(node.parents[i] is not edge for i, edge in zip(inputs, node.edges)):
        return None  # (a cast or expand of the source in between: more than one node)

    def by_edges(grad_inputs: tuple, grad_outputs: tuple) -> tuple | None:
        seen = tuple(grad_inputs[i] for i in inputs)
        returned = hook(seen, grad_outputs)
        if returned is None:
            return None
        placed = list(grad_inputs)
        for i, g in zip(inputs, _replaced(hook, returned, seen)):
            placed[i] = g
        return tuple(placed)

    return by_edges


def _in_slots(hook: Callable, slots: tuple) -> Callable:
    """``hook`` seeing a fused node's input gradients one per argument of its op, None where
    an optional one is absent (``slots``), as PyTorch's node gives them."""

    def in_slots(grad_inputs: tuple, grad_outputs: tuple) -> tuple | None:
        every = fill_slots(slots, grad_inputs)
        returned = hook(every, grad_outputs)
        if returned is None:
            return None
        # (checked against every slot: a wrong count is an error that names the hook's)
        returned = _replaced(hook, returned, every)
        return tuple(g for g, present in zip(returned, slots) if present)

    return in_slots


def _refuse(node: Any, method: str, why: str, instead: str) -> None:
    raise RuntimeError(
        f"{grad_fn_name(node)}.{method}: {why}, so a hook here would see other gradients "
        f"than PyTorch's; use tensor hooks instead (Tensor.register_hook on {instead})"
    )


#: id(leaf) -> a weak reference to its AccumulateGrad, while something holds that (which
#: holds the leaf, so the id is the leaf's): as PyTorch's leaf holds its accumulator weakly,
#: a leaf freed frees it. (A dict of references: a WeakValueDictionary costs 2.5x as much.)
_ACCUMULATORS: dict[int, weakref.ref] = {}


def _forget_accumulator(key: int, ref: weakref.ref) -> None:
    if _ACCUMULATORS.get(key) is ref:
        del _ACCUMULATORS[key]


def _drop_hooks(key: int) -> None:
    """Drop the node hooks of the freed AccumulateGrad of the leaf of id ``key``."""
    NODE_PREHOOKS.pop(key, None)
    NODE_POSTHOOKS.pop(key, None)
    ref = HOOKED_ACCUMULATORS.get(key)
    if ref is not None and ref() is None:
        del HOOKED_ACCUMULATORS[key]


def _hold_accumulators(node: Any, inputs: Any) -> None:
    """Keep the AccumulateGrad of each leaf among ``inputs`` alive with ``node``, as
    PyTorch's graph holds its edges' nodes (the leaf holds its accumulator weakly). Such a
    node then holds its grad_fn object weakly: that object holds the node, and the cycle
    would keep the node and its accumulators (their hooks) until the cycle collector ran."""
    held = tuple([_function_of(p) for p in inputs if p is not None and not hasattr(p, "parents")])
    if held:
        node.accumulators = held
        view = node.view
        if view is not None and type(view) is not type(node):
            if type(view) is not weakref.ReferenceType:
                node.view = weakref.ref(view)


def _function_of(parent: Any) -> Any:
    if parent is None:
        return None
    if hasattr(parent, "parents"):  # a node
        return grad_fn_of(parent)
    key = id(parent)  # a leaf tensor: its one accumulator
    ref = _ACCUMULATORS.get(key)
    found = None if ref is None else ref()
    if found is None:
        found = AccumulateGrad(parent)
        _ACCUMULATORS[key] = weakref.ref(found, partial(_forget_accumulator, key))
    return found
