"""``torch.autograd.graph``: hooks on the tensors the graph saves for backward, hooks on
the gradients of several tensors at once, and ``Node`` (what every ``grad_fn`` is).

Inside ``saved_tensors_hooks(pack, unpack)``, each tensor input that a recorded node keeps
for its gradient rule goes through ``pack`` when the node is made, and the node keeps only
what ``pack`` returned (with the input's shape, dtype and version); backward calls
``unpack`` on it before the rule runs. Nodes whose rules read no input value keep none, so
nothing of theirs is packed, as PyTorch packs only what its nodes save; an output that a
node keeps (``exp``'s) and what an ``autograd.Function`` saves (``save_for_backward``) go
through them too, and so do the integer and bool tensors a node saves beside its inputs
(indices, masks, class targets: ``Node.operands``; the rules of take, gather and
scatter read what unpack gives for their index, and so do those of sort, topk, max(dim) and
the order statistics for their indices). A matmul node packs mat2 first, as PyTorch's
MmBackward0 and BmmBackward0 (self first where it stands for AddmmBackward0 or MvBackward0).
Softmax, layer_norm, cross_entropy and the activations PyTorch computes in one node (gelu,
silu, ...) record one node under the hooks that packs what PyTorch's saves; another composite
op (mse_loss, multi_margin_loss) packs what its steps save, which may differ from what
PyTorch's one node saves. A packed output changed in place later is no error (no version
of a packed tensor is checked): the tensor the pack hook was given follows the output's
changes, as PyTorch's hook is given the output itself (:func:`packed_output_follows`).
"""

from __future__ import annotations

import abc
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable

from tensorweaver.autograd.grad_fn import AccumulateGrad, GradFn
from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.node import (
    PACKED,
    SAVED_TENSORS_HOOKS,
    SELF_FIRST,
    HooksOff,
    shape_of,
)
from tensorweaver.autograd.node import Node as _GraphNode
from tensorweaver.promotion import result_type
from tensorweaver.tensor import Tensor


class Node(abc.ABC):
    """What every ``grad_fn`` (and the ``AccumulateGrad`` of a leaf among ``next_functions``)
    is an instance of, as PyTorch's ``torch.autograd.graph.Node``: for ``isinstance`` tests
    in code that walks the graph."""

    @abc.abstractmethod
    def name(self) -> str:
        """The node's name (``MulBackward0``)."""

    @classmethod
    def __subclasshook__(cls, other: type) -> bool:
        return issubclass(other, (GradFn, AccumulateGrad)) or NotImplemented


#: The message of the innermost ``disable_saved_tensors_hooks``, None outside one.
_DISABLED: list = [None]


def _unpacks_through(node: _GraphNode, unpack: Callable) -> None:
    """Have backward unpack what ``node`` packed through ``unpack`` (the engine unpacks the
    nodes in :data:`PACKED`) while ``node`` lives."""
    key = id(node)
    if key not in PACKED:  # (packed before: through the same hooks)
        PACKED[key] = unpack
        weakref.finalize(node, PACKED.pop, key, None)


class _Packed:
    """A packed input in a node: what ``pack`` returned, and the input's shape, dtype and
    device. Its version is the one recorded: backward uses what ``unpack`` gives, so a
    later in-place change of the input is no error, as in PyTorch."""

    __slots__ = ("value", "shape", "dtype", "backend", "_version", "output", "kept")

    def __init__(self, t: Tensor, value: Any) -> None:
        self.value = value
        self.shape, self.dtype, self.backend = t.shape, t.dtype, t.backend
        self._version = t._version
        self.output: weakref.ref | None = None  # (a saved output's: packed_output_follows)
        self.kept: tuple | None = None  # (pack_output's, mv's: the shape the rule reads)


class saved_tensors_hooks:
    """Context manager: ``pack_hook(tensor)`` runs on each tensor saved for backward as it
    is saved, ``unpack_hook(packed)`` (which must return a tensor) when backward needs it."""

    def __init__(
        self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]
    ) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        if _DISABLED[0] is not None:
            raise RuntimeError(_DISABLED[0])
        SAVED_TENSORS_HOOKS.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc: object) -> None:
        SAVED_TENSORS_HOOKS.pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors kept in CPU memory until backward, then moved back to their device."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(
            lambda t: (t.device, t.detach().cpu()), lambda packed: packed[1].to(packed[0])
        )


@contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Inside, entering ``saved_tensors_hooks`` raises RuntimeError(error_message); entering
    it while such hooks are on raises that error at once, as PyTorch."""
    if SAVED_TENSORS_HOOKS:
        raise RuntimeError(error_message)
    before = _DISABLED[0]
    _DISABLED[0] = error_message
    try:
        yield
    finally:
        _DISABLED[0] = before


#: Ops whose nodes keep their output's array for their rule, as PyTorch's nodes save their
#: result: that output is what goes through the hooks. Where in ``node.saved`` it is: all of
#: it (None), or the item at that position (relu's first of two; amax/amin's, whose node
#: keeps ``(axes, keepdim, output)``, also max()'s and min()'s). A pow node keeps its output
#: where the exponent is a tensor (:func:`_pow_keeps_output`).
_KEEP_OUTPUT: dict[str, int | None] = {
    **dict.fromkeys(("exp", "exp2", "tanh", "sqrt", "sigmoid", "expm1", "reciprocal", "rsqrt")),
    **dict.fromkeys(("logsumexp", "linalg_vector_norm", "prod")),  # (reduce.py _saving_result)
    **dict.fromkeys(("hypot", "polar")),  # (ops/numeric.py hypot, ops/complex.py polar)
    "pow": None,
    "relu": 0,
    "max": 2,
    "min": 2,
}


#: True while a reduction without keepdim records its node (ops/reduce.py
#: ``_saving_result``): its output is packed once squeezed (:func:`pack_output`).
PACK_OUTPUT_LATER = [False]


#: True while pow records the node of a tensor to a tensor's power (ops/elementwise.py): a
#: 0-d operand is one the caller gave, which PyTorch's PowBackward1 saves, no Python number.
GIVEN_TENSORS = [False]


#: The matmul nodes that packed mat2 first (MmBackward0, BmmBackward0): they unpack it first.
MAT2_FIRST: weakref.WeakSet = weakref.WeakSet()


#: Binary ops whose PyTorch node packs ``other`` before ``self`` (MulBackward0,
#: DivBackward0, MaximumBackward0, MinimumBackward0, RemainderBackward1, HypotBackward0 (then
#: its result), Atan2Backward0), unless made under node.py's :data:`SELF_FIRST`.
_OTHER_FIRST = frozenset(("mul", "div", "maximum", "minimum", "remainder", "hypot", "atan2"))

#: Ops whose PyTorch node packs its result alone, never an input (LinalgInvExBackward0,
#: LinalgCholeskyExBackward0: their rules read the output; linalg/primitives.py ``_wrap``
#: packs it and keeps the input's shape alone).
_RESULT_ALONE_OPS = frozenset(("linalg_inv", "linalg_cholesky"))


def _RESULT_ALONE(node: _GraphNode, i: int) -> bool:
    return False


def pack_inputs(node: _GraphNode) -> None:
    """Pass what ``node`` keeps for its rule through the innermost pack hook: each tensor
    input whose value the rule reads (not a 0-d constant standing for a Python number,
    which PyTorch does not save), and the output an op keeps (exp's, relu's)."""
    from tensorweaver.autograd.gradients import READS_INPUT
    from tensorweaver.autograd.node import _constant_number

    reads = _RESULT_ALONE if node.op in _RESULT_ALONE_OPS else READS_INPUT.get(node.op)
    inputs = list(node.inputs)
    order = range(len(inputs))
    if node.op == "matmul" and not SELF_FIRST[0]:
        order = (1, 0)  # (MmBackward0, BmmBackward0: mat2, then self)
        MAT2_FIRST.add(node)
    keeps_output = node.op in _KEEP_OUTPUT and (node.op != "pow" or _pow_keeps_output(node.saved))
    if keeps_output and node.op == "pow":
        order = (1, 0)  # (PowBackward1 and 2: the exponent, then self)
    elif node.op in _OTHER_FIRST and not SELF_FIRST[0]:
        order = (1, 0)  # (MulBackward0, DivBackward0, ...: other, then self)
    later = keeps_output and PACK_OUTPUT_LATER[0]
    with HooksOff() as (pack, unpack):
        for i in order:
            t = inputs[i]
            if not isinstance(t, Tensor):
                continue
            if reads is None or reads(node, i):
                vector = _mv_vector(node, i, t)
                if vector is not None:  # (MvBackward0 packs the vector itself)
                    inputs[i] = _Packed(t, pack(vector))
                    inputs[i].kept = tuple(t.shape)
                elif GIVEN_TENSORS[0] or not _constant_number(t):
                    inputs[i] = _Packed(t, pack(t))
            elif keeps_output:
                # Its shape alone, as PyTorch's node (ExpBackward0) keeps no input: the packed
                # output may come to hold the output itself (packed_output_follows), a cycle
                # through this node that would keep the input alive until gc.
                inputs[i] = shape_of(t)
        saved = node.saved
        if keeps_output and not later:
            at = _KEEP_OUTPUT[node.op]
            native = saved if at is None else saved[at]
            out = Tensor(native, node.inputs[0].backend, _output_dtype(node))
            packed = _Packed(out, pack(out))
            packed.output = weakref.ref(out)
            if node.op == "relu":  # (not the backend's fused record: the rule reads unpack's)
                node.saved = (packed, None)
            else:
                node.saved = packed if at is None else (*saved[:at], packed, *saved[at + 1 :])
    node.inputs = tuple(inputs)
    _unpacks_through(node, unpack)


def _mv_vector(node: _GraphNode, i: int, t: Tensor) -> Tensor | None:
    """The vector of ``mv`` whose column (a view unsqueezed for the product: ops/linalg.py)
    is ``t``, operand ``i`` of ``node``, a matmul node standing for MvBackward0; else None."""
    if i != 1 or node.op != "matmul" or not SELF_FIRST[0] or t._view_of is None:
        return None
    vector = t._view_of[0]
    return vector if vector.ndim == 1 and t.shape == (*vector.shape, 1) else None


def pack_output(output: Tensor, kept: tuple) -> None:
    """Pass ``output``, a reduction's result without its reduced dims, through the innermost
    pack hook, its node (of :data:`_KEEP_OUTPUT`, made under :data:`PACK_OUTPUT_LATER`)
    keeping it in the shape ``kept`` with them, as PyTorch's LogsumexpBackward0, ProdBackward1
    and LinalgVectorNormBackward0 pack the result the caller sees: the hook is given a tensor
    over ``output``'s array, which follows its later changes (:func:`packed_output_follows`);
    backward reads what unpack gives in the shape ``kept``."""
    node = output._node
    with HooksOff() as (pack, unpack):
        given = Tensor(output.native, output.backend, output.dtype)
        packed = _Packed(given, pack(given))
    packed.output = weakref.ref(given)
    packed.kept = tuple(kept)
    node.saved = packed
    _unpacks_through(node, unpack)


def packed_output_follows(node: _GraphNode, output: Tensor) -> bool:
    """Whether ``node`` packed the output ``output`` (whose value just changed in place):
    then the tensor its pack hook was given becomes one with ``output`` (its value now, its
    version counter, its later changes), as PyTorch's pack hook is given the output tensor
    itself, so what the hook kept of it (the tensor, a ``detach()`` of it) sees the change;
    and no version is checked, as PyTorch checks none of a packed tensor."""
    if node.op == "function":  # (Function._pack packed the output tensor itself)
        ctx = node.saved[1]
        return getattr(ctx, "_unpack", None) is not None and any(
            [type(t) is tuple and type(t[0]) is int for t in ctx._saved or ()]
        )
    packed = _packed_output(node)
    if packed is None:
        return False
    given = packed.output()
    if given is not None and given._alias_of is None and given.shape == output.shape:
        given._assign(output.native)  # (what its own aliases and views see follows too)
        given._share_memory_of(output)
    return True


def packed_output_rewritten(node: _GraphNode, old: Any, new: Any) -> bool:
    """Whether ``node`` packed its output, whose array ``old`` a write through ``.data``
    replaced by ``new``: then the tensor its pack hook was given takes ``new`` too, unseen
    by its version, as PyTorch's (the output itself) reads the memory the write changed."""
    packed = _packed_output(node)
    if packed is None:
        return False
    given = packed.output()
    if given is not None and given._alias_of is None and given.native is old:
        given._take(new)
    return True


def _packed_output(node: _GraphNode) -> _Packed | None:
    """What ``node`` (of :data:`_KEEP_OUTPUT`) packed of its output, None where it did not."""
    if id(node) not in PACKED:
        return None
    saved = node.saved
    at = _KEEP_OUTPUT.get(node.op)
    packed = saved if at is None or type(saved) is not tuple else saved[at]
    return packed if type(packed) is _Packed and packed.output is not None else None


def _pow_keeps_output(saved: Any) -> bool:
    """Whether a pow node's ``saved`` is its output's array (a tensor exponent's), not the
    number operands of PowBackward0 (a tuple, or None for a NumPy integer exponent)."""
    return saved is not None and type(saved) is not tuple


def _output_dtype(node: _GraphNode) -> Any:
    """The dtype of the output a node of :data:`_KEEP_OUTPUT` keeps: its input's, but a
    norm's is real, a polar's complex and a pow's is its operands' promoted one."""
    first = node.inputs[0]
    if node.op == "pow":
        return result_type(*node.inputs)
    if node.op == "polar":
        return first.dtype.to_complex()
    return first.dtype.to_real() if node.op == "linalg_vector_norm" else first.dtype


def pack_saved(node: _GraphNode, at: int, t: Tensor) -> None:
    """Pass ``t`` through the innermost pack hook: a tensor that PyTorch's node saves and that
    ``node`` keeps, maybe of another shape, at ``node.saved[at]`` (the indices of
    ``max(dim)``, which its gather keeps with the reduced dim); backward reads what unpack
    gives, in the kept shape (:func:`unpacked`)."""
    saved = node.saved
    with HooksOff() as (pack, unpack):
        packed = _Packed(saved[at], pack(t))
    node.saved = (*saved[:at], packed, *saved[at + 1 :])
    _unpacks_through(node, unpack)


#: id(node) -> what the pack hook returned for the integer and bool tensors ``node`` saves
#: beside its inputs (``Node.operands``: indices, masks, a loss's class targets), kept until
#: the node dies, as PyTorch keeps each saved variable's packed value.
PACKED_OPERANDS: dict[int, tuple] = {}


def pack_operands(node: _GraphNode, tensors: tuple) -> None:
    """Pass the integer and bool tensors among ``tensors``, which ``node`` saves (noted in
    ``node.operands``), through the innermost pack hook, as PyTorch's IndexBackward0,
    GatherBackward0, NllLossBackward0... pack the indices, masks and targets they save.
    (Float operands are packed by the nodes that read them.) Noted again for one node (an
    inner call's, then this call's): they replace those packed before. The one index of a
    node whose rule reads what unpack gives (:func:`unpack_operands`) is no longer
    version-checked, as PyTorch checks no packed tensor's version."""
    with HooksOff() as (pack, unpack):
        values = [
            _Packed(t, pack(t))
            for t in tensors
            if t is not None and not t.dtype.is_floating_point and not t.dtype.is_complex
        ]
    if len(values) == len(node.operands) and _reads_unpacked(node, len(values)):
        node.operands = ()  # (PyTorch checks no version of a saved tensor that was packed)
    if values:
        key = id(node)
        if key not in PACKED_OPERANDS:
            weakref.finalize(node, PACKED_OPERANDS.pop, key, None)
        PACKED_OPERANDS[key] = (unpack, tuple(values))
        _unpacks_through(node, unpack)


def unpack_operands(node: _GraphNode) -> Any:
    """``node.saved`` as its rule reads it once the unpack hook ran on what
    :func:`pack_operands` packed for ``node``, as PyTorch's backward reads what unpack gives
    for each saved variable: a take, gather or scatter node's index made from the unpacked
    one, or remade from the unpacked ones by its ``ops.index.Remade`` (``x[i]``, take; a
    fused embedding's inputs, through its ``Resaved``). (Other nodes read what they kept.)"""
    unpack, values = PACKED_OPERANDS[id(node)]
    given = [_checked(unpack(packed.value)) for packed in values]
    saved = node.saved
    if not _reads_unpacked(node, len(given)):
        return saved
    if node.op in _SAVE_INDEX and len(saved) == 2:
        return saved[0], _index_read(node, given[0], values[0].shape, saved[0], saved[1])
    for value, packed in zip(given, values):
        _same_shape(node, value, packed.shape)
    remade = _remade(node)
    unpacked = iter(given)  # (in order: the node packed the given tensors, arrays kept)
    over = remade.over([next(unpacked) if isinstance(t, Tensor) else t for t in remade.given])
    if node.op in _SAVE_INDEX:
        return saved[0], saved[1], over
    name, resaved, *rest = saved
    return (name, type(resaved)(resaved.saved, resaved.slot, over), *rest)


#: The ops whose node keeps ``(dim, index)``: its caller's index as int64 in the kept shape,
#: where no ``ops.index.Remade`` follows (``saved`` has three items then).
_SAVE_INDEX = frozenset(("take", "gather", "scatter", "scatter_add"))


def _remade(node: _GraphNode) -> Any:
    """The ``ops.index.Remade`` that remakes ``node``'s index from its caller's index tensors:
    a take, gather or scatter node's, or a fused node's (its ``Resaved``'s); else None."""
    saved = node.saved
    if node.op in _SAVE_INDEX:
        return saved[2] if len(saved) == 3 else None
    if node.op == "fused":
        from tensorweaver.ops.composite import Resaved

        return saved[1].remade if type(saved[1]) is Resaved else None
    return None


def _reads_unpacked(node: _GraphNode, count: int) -> bool:
    """Whether ``node``'s rule reads what unpack gives for the ``count`` index tensors it
    saves: the one index it keeps, or all those its ``ops.index.Remade`` remakes its index
    from (else it reads the values it kept, whose versions backward still checks)."""
    if node.op in _SAVE_INDEX and len(node.saved) == 2:
        return count == 1
    remade = _remade(node)
    return remade is not None and count == sum([isinstance(t, Tensor) for t in remade.given])


def _index_read(node: _GraphNode, value: Tensor, shape: tuple, dim: int, kept: Tensor) -> Tensor:
    """What a take, gather or scatter rule reads for ``kept``, the int64 index its node keeps,
    given ``value``, what unpack returned for the index of ``shape`` its caller gave:
    ``value`` as int64 in ``kept``'s shape, checked against that shape and the size along
    ``dim`` as PyTorch's backward kernels check it."""
    from tensorweaver.contract import dtypes
    from tensorweaver.ops.bounds import check_index

    if value.dtype.is_floating_point or value.dtype.is_complex or value.dtype is dtypes.bool:
        raise RuntimeError(
            f"{node.name}: the saved_tensors_hooks unpack hook returned a {value.dtype.name} "
            "tensor for a saved index; return an integer (int64) tensor"
        )
    _same_shape(node, value, shape)
    index = value.long().reshape(kept.shape)
    indexed = node.inputs[0].shape
    check_index(node.name, index, indexed[dim] if indexed else 1, dim)  # (0-d: one element)
    return index


def _same_shape(node: _GraphNode, value: Tensor, shape: tuple) -> None:
    """Refuse ``value``, what unpack returned for a saved index of ``shape``, in another
    shape (none is reshaped; 0-d counts as 1-d)."""
    if (tuple(value.shape) or (1,)) != (tuple(shape) or (1,)):
        raise RuntimeError(
            f"{node.name}: the saved_tensors_hooks unpack hook returned an index of shape "
            f"{list(value.shape)} for one of shape {list(shape)}: Index tensor must have the "
            "same number of dimensions and sizes as the one saved; return one of the shape "
            "the hook was given"
        )


def unpacked(node: _GraphNode) -> tuple:
    """``node``'s inputs and saved values as its rule reads them: each packed input
    unpacked, in the graph where that input was (so that a backward differentiated again
    reaches it), and a packed output as its array again."""
    unpack = PACKED[id(node)]
    inputs = list(node.inputs)
    order = (1, 0) if node.op == "matmul" and node in MAT2_FIRST else range(len(inputs))
    for i in order:
        kept = inputs[i]
        if type(kept) is _Packed:
            value = unpack(kept.value)
            if kept.kept is not None:  # (mv's vector: the column its node read)
                value = _checked(value).reshape(kept.kept)
            inputs[i] = _restored(value, kept, node.parents[i])
    saved = node.saved
    if type(saved) is _Packed:
        value = _checked(unpack(saved.value))
        kept = saved.kept
        saved = value.native if kept is None else value.backend.reshape(value.native, kept)
    else:
        at = _KEEP_OUTPUT.get(node.op)
        if at is not None and type(saved[at]) is _Packed:
            native = _checked(unpack(saved[at].value)).native
            saved = (*saved[:at], native, *saved[at + 1 :])
        elif type(saved) is tuple and _Packed in map(type, saved):  # (pack_saved's)
            saved = tuple([_kept(s, unpack) if type(s) is _Packed else s for s in saved])
        elif node.op == "piecewise_linear" and len(saved) == 3:
            # (nn/functional/activation.py: the mask from the unpacked x, as PyTorch's)
            with no_grad():
                saved = (saved[2](inputs[0]), saved[1])
    return tuple(inputs), saved


def _kept(packed: _Packed, unpack: Callable) -> Tensor:
    """What ``unpack`` gives for a tensor :func:`pack_saved` packed, in the shape its node
    kept it in."""
    value = _checked(unpack(packed.value))
    return value if value.shape == packed.shape else value.reshape(packed.shape)


def _checked(value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(
            "Output of saved tensor unpack_hook expected to be a Tensor but got result of "
            f"type {type(value).__name__}"
        )
    return value


def _restored(value: Any, kept: _Packed, parent: Any) -> Tensor:
    _checked(value)
    if parent is None or not is_grad_enabled():  # (no backward through this one)
        return value.detach()
    if type(parent) is _GraphNode:  # as the input was: the output of its producer
        out = Tensor(value.native, value.backend, value.dtype)
        out._node, out._requires_grad = parent, True
        return out
    return parent + (value - parent).detach()  # a leaf: the unpacked values, its gradient


#: How many multi-grad hooks are registered (while none, backward keeps no frames), and
#: per backward pass running, innermost last, what their tensors' hooks gathered in it.
MULTI_GRAD_HOOKS = [0]
PASS_FRAMES: list[dict] = []


class _MultiHandle:
    """``register_multi_grad_hook``'s handle: ``remove()`` unregisters it."""

    def __init__(self, handles: list) -> None:
        self._handles = handles

    def remove(self) -> None:
        if self._handles:
            MULTI_GRAD_HOOKS[0] -= 1
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def __enter__(self) -> _MultiHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def register_multi_grad_hook(tensors: Any, fn: Callable, *, mode: str = "all") -> _MultiHandle:
    """Call ``fn`` once per backward pass that computes a gradient of one of ``tensors``:
    with ``mode="all"``, once all of them are computed, with the tuple of their gradients
    (None for those the pass does not reach); with ``mode="any"``, with the first one."""
    if mode not in ("all", "any"):
        raise ValueError(
            f"register_multi_grad_hook: expects mode to be one of ('all', 'any') but got {mode}"
        )
    tensors = tuple(tensors)
    for t in tensors:
        if not t.requires_grad:
            raise AssertionError("Expected gradient function to be set")
    key, count = object(), len(tensors)

    def fire(grads: dict) -> None:
        fn(tuple(grads.get(i) for i in range(count)))

    def seen(i: int, g: Tensor) -> None:
        if not PASS_FRAMES:
            return
        frame = PASS_FRAMES[-1]
        if mode == "any":
            if key not in frame:
                frame[key] = None
                fn(g)
            return
        frame.setdefault(key, (fire, {}))[1][i] = g

    handles = [t.register_hook(lambda g, i=i: seen(i, g)) for i, t in enumerate(tensors)]
    MULTI_GRAD_HOOKS[0] += 1
    return _MultiHandle(handles)


def pass_ended(frame: dict) -> None:
    """Run the ``mode="all"`` multi-grad hooks whose tensors this backward pass reached."""
    for entry in frame.values():
        if entry is not None:
            fire, grads = entry
            fire(grads)
