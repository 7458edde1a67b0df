"""Composite ops that a backend may fuse (see ``COMPOSITES`` in the IR contract).

``fused_or_reference`` runs the backend's ``fused_<name>`` when it has one, else the core's
reference decomposition. The fused path records one node whose rule calls
``fused_<name>_backward``; under ``create_graph=True`` the rule differentiates the reference
instead, so double backward stays exact on every backend (a convolution's gradients are then
the outputs of one node that reads the output's gradient, the input and the weight, as
PyTorch's ConvolutionBackwardBackward0). A composite whose gradient PyTorch
writes from its output alone (softmax) may pass that formula as ``from_output``: under
``create_graph`` it then runs on the node's own output, attached to the node, as PyTorch's.

A composite may have more outputs than one (``max_pool_with_indices``: the values and their
int64 indices): the fused kernel and the reference then return a tuple, and only the first
output carries a gradient.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any, Callable

from tensorweaver.amp import autocast_dtype
from tensorweaver.autograd.mode import enable_grad, is_grad_enabled
from tensorweaver.autograd.names import composite_name
from tensorweaver.autograd.node import SAVED_TENSOR_FREED, SAVED_TENSORS_HOOKS, HooksOff
from tensorweaver.ops.apply import apply, check_backends, labelled
from tensorweaver.ops.fusion import fused_kernel
from tensorweaver.ops.linalg import autocast_operands
from tensorweaver.tensor import Tensor

#: Composites that compute in the autocast dtype inside ``tw.autocast`` (matrix products).
AUTOCAST = frozenset({"conv2d", "conv3d", "conv_transpose", "scaled_dot_product_attention"})

#: Composites whose reference records PyTorch's own nodes for the op (linear: an addmm of
#: the bias, the input's rows and the weight's transpose, viewed back; cross-entropy: the nll
#: step of log_softmax's output), left as they are.
OWN_NODES = frozenset({"linear", "cross_entropy", "cross_entropy_nd"})

#: Composites whose PyTorch node saves its input tensors, or views of them, and nothing
#: computed from them (ConvolutionBackward0's input and weight; linear's addmm: its 2-d
#: input, ``weight.t()``): a write through ``.data`` (no version bump) reaches that node's
#: backward, so their fused nodes keep what the kernel read (:class:`AsRead`). (Not a norm:
#: PyTorch's keeps the forward's statistics beside the input, which a rerun would change.)
READS_INPUTS = frozenset({"linear", "conv2d", "conv3d", "conv_transpose"})

#: The composites of :data:`READS_INPUTS` whose reference's own nodes are not PyTorch's:
#: without the backend's kernel, one node records them (:class:`Traced`), which reads its
#: inputs as PyTorch's does (the reference's inner nodes keep copies made in forward: the
#: padded, unfolded input, the flipped weight).
TRACED = READS_INPUTS - OWN_NODES

#: The composite (its name and its first input's rank) whose reference's last node a node
#: is, where ``fused_or_reference`` labelled it: PyTorch's steps for it are the fused op's
#: (autograd/grad_fn.py ``next_functions``). Weak: recording a node keeps nothing alive.
REFERENCE_OF: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: The composites recorded in :data:`REFERENCE_OF`: those of grad_fn.py's ``_FUSED_STEPS``
#: not in :data:`OWN_NODES` (the others' nodes are never looked up there: no entry to pay
#: for on every call).
STEPPED_REFERENCES = frozenset({"instance_norm"})


def fused_or_reference(
    name: str,
    reference: Callable[..., Any],
    tensors: tuple,
    *static: Any,
    extra_dtypes: tuple = (),
    from_output: Callable[..., Tensor] | None = None,
) -> Any:
    """``name`` on ``tensors`` (one device, one dtype) with static arguments ``static``.

    An optional tensor argument that is absent (``conv2d``'s bias) is None in ``tensors``:
    the backend and the reference receive None there and it gets no gradient. With
    ``extra_dtypes`` the composite returns a tuple: its output, then one output of each
    of those dtypes, which carry no gradient. ``from_output(y, g, *static)``, where given, is
    the gradient of the one input from the output ``y`` and its gradient ``g``. A
    :class:`Line` ``reference`` (a 1-D convolution's) takes the caller's 3-D input and
    weight, which the kernel and its backward see over a height of one."""
    given, slots = tensors, None  # slots (which arguments are present): only when one is not
    for t in tensors:
        if t is None:
            given = tuple(t for t in tensors if t is not None)
            slots = tuple(t is not None for t in tensors)
            break
    backend = check_backends(name, given)
    low = autocast_dtype()
    if low is not None and name in AUTOCAST:
        given = autocast_operands(low, *given)
        tensors = given if slots is None else fill_slots(slots, given)
    dtype = given[0].dtype
    for t in given[1:]:
        if t.dtype is not dtype and t.dtype.kind in "fc":
            # PyTorch's kernels refuse mixed dtypes (RuntimeError) on every device: so do
            # both paths here, whether this backend fuses the composite or not. Complex
            # counts too (a complex bias of a real convolution).
            raise RuntimeError(
                f"{name}: all floating-point and complex arguments must have one dtype, got "
                f"{', '.join(t.dtype.name for t in given)}; convert them with .to(...)"
            )
    fused = fused_kernel(backend, name)
    if fused is None:
        if name in TRACED and _recorded(given):
            return _traced(name, reference, tensors, static, dtype, given, slots)
        out = reference(*tensors, *static)
        first = out[0] if extra_dtypes else out
        node = first._node if isinstance(first, Tensor) else None
        if node is not None and name not in OWN_NODES:
            labelled(first, composite_name(name, tensors, static), *tensors)
            if name in STEPPED_REFERENCES and all(
                t is None or t._node is not node for t in tensors
            ):  # (not an input's)
                REFERENCE_OF[node] = name, tensors[0].dim()
        return out
    natives = [None if t is None else t.native for t in tensors]
    if type(reference) is Line:
        out, saved = _line_kernel(fused, backend, natives, static)
    else:
        out, saved = fused(*natives, *static)
    if extra_dtypes:
        out, *extras = out
    if from_output is not None:
        saved = FromOutput(saved, out, from_output)
    elif name in READS_INPUTS and _recorded(given):
        if not SAVED_TENSORS_HOOKS:
            saved = AsRead(saved, natives, _reads(name, tensors))
        elif name in TRACED:  # (backward reads what unpack gives: see _pack_read)
            saved = AsRead(saved, natives, _UNPACKED)
    # A node only where an input requires grad (apply decides; without one, saved is dropped).
    first = apply("fused", out, dtype, given, (name, saved, reference, static, slots))
    if name in TRACED and first._node is not None:
        _convolution_node(first._node, tensors, reference, static)
    if not extra_dtypes:
        return first
    return (first, *(Tensor(e, backend, t) for e, t in zip(extras, extra_dtypes)))


class Line:
    """The reference of a 1-D convolution (``reference`` of a 2-D one, ``conv2d``'s or
    ``conv_transpose``'s, with static arguments of two dimensions): called on the caller's
    ``(N, C, L)`` input and 3-D weight, it runs ``reference`` over a height of one. The
    composite's node then has the caller's tensors for inputs, as PyTorch's one
    ConvolutionBackward0 (:func:`_line_kernel`, :func:`_line_backward`)."""

    __slots__ = ("reference",)

    def __init__(self, reference: Callable[..., Tensor]) -> None:
        self.reference = reference

    def __call__(self, x: Tensor, weight: Tensor, *rest: Any) -> Tensor:
        return self.reference(x.unsqueeze(2), weight.unsqueeze(2), *rest).squeeze(2)


def _line_kernel(fused: Callable, backend: Any, natives: list, static: tuple) -> tuple:
    """The fused 2-D kernel's output (as 3-D) and saved values for a 1-D convolution's
    ``natives`` (input, weight, bias), seen over a height of one."""
    x, weight, bias = natives
    lifted = [backend.reshape(n, (*n.shape[:2], 1, *n.shape[2:])) for n in (x, weight)]
    out, saved = fused(*lifted, bias, *static)
    return backend.reshape(out, (*out.shape[:2], out.shape[3])), saved


def _line_backward(
    fused_grad: Callable, saved: Any, g: Tensor, needs: tuple, inputs: tuple, slots: Any
) -> tuple:
    """The fused 2-D kernel's backward for a 1-D convolution (:func:`_line_kernel`): its
    gradients in the shapes of the node's inputs."""
    backend = g.backend
    native = backend.reshape(g.native, (*g.shape[:2], 1, g.shape[2]))
    if slots is None:
        natives = fused_grad(saved, native, needs)
    else:
        natives = fused_grad(saved, native, fill_slots(slots, needs, False))
        natives = [n for n, s in zip(natives, slots) if s]
    return tuple(
        [
            None if n is None else Tensor(backend.reshape(n, tuple(t.shape)), backend, t.dtype)
            for n, t in zip(natives, inputs)
        ]
    )


def fill_slots(slots: tuple, given: Any, absent: Any = None) -> tuple:
    """One entry per argument: the next of ``given`` where ``slots`` says it is present."""
    found = iter(given)
    return tuple(next(found) if present else absent for present in slots)


class FromOutput:
    """A fused node's saved values, with its output and the gradient formula written from it
    (what ``create_graph`` differentiates)."""

    __slots__ = ("saved", "out", "rule")

    def __init__(self, saved: Any, out: Any, rule: Callable[..., Tensor]) -> None:
        self.saved, self.out, self.rule = saved, out, rule


class Resaved:
    """A fused node's saved values, and how to make again its input ``slot`` (an index) from
    what the caller gave (``remade``: an ``ops.index.Remade``). Where a write that bumped no
    version (through ``.data``) changed that, backward reruns the fused kernel on the input
    remade for fresh saved values, as PyTorch's node reads the index tensor it saved."""

    __slots__ = ("saved", "slot", "remade")

    def __init__(self, saved: Any, slot: int, remade: Any) -> None:
        self.saved, self.slot, self.remade = saved, slot, remade

    def inputs(self, node: Any) -> tuple:
        """``node``'s inputs, the one at ``slot`` as it is now."""
        inputs = node.inputs
        now = self.remade.index(None)  # (None: unchanged; the input itself may be remade)
        if now is None:
            return inputs
        return (*inputs[: self.slot], now, *inputs[self.slot + 1 :])

    def current(self, node: Any) -> Any:
        """The saved values for ``node``'s inputs as they are now."""
        inputs = self.inputs(node)
        return self.saved if inputs is node.inputs else _saved_again(node, inputs)


class AsRead:
    """A fused node's saved values (or its reference's graph: :class:`Traced`), the arrays of
    its inputs the kernel read (``natives``, None for an absent argument), and how PyTorch's
    node reads each input (``reads``, from :func:`_reads`), for a composite of
    :data:`READS_INPUTS`: where a write through ``.data`` changed what it reads since,
    backward reruns the kernel for fresh saved values, as PyTorch's node reads the memory of
    the tensors it saved."""

    __slots__ = ("saved", "natives", "reads")

    def __init__(self, saved: Any, natives: list, reads: tuple) -> None:
        self.saved, self.natives, self.reads = saved, natives, reads

    def current(self, node: Any) -> Any:
        """The saved values for ``node``'s inputs as they are now."""
        now, changed = self.read(node)
        if not changed:
            return self.saved
        if type(self.saved) is Traced:
            return self.saved.again(node, now)
        return _rerun(node, node.inputs[0].backend, now)

    def read(self, node: Any) -> tuple[list, bool]:
        """The arrays ``node``'s backward reads now, one per argument (None where absent),
        and whether one is not the kernel's."""
        slots = node.saved[4]
        inputs = node.inputs
        tensors = inputs if slots is None else fill_slots(slots, inputs)
        now, changed = list(self.natives), False
        for i, (t, read) in enumerate(zip(tensors, self.reads)):
            if read is None:
                continue
            if read is True:
                native = t.native
            else:
                native = read.native
            if native is not now[i]:
                now[i], changed = native, True
        return now, changed


class Traced:
    """The graph of a composite's reference (no kernel of the backend's), recorded on
    stand-ins of its inputs (``stands``, None for an absent argument) and ending at
    ``node``: backward differentiates it. Its output is not kept (PyTorch's node keeps none):
    the gradient itself roots that graph."""

    __slots__ = ("node", "stands")

    def __init__(self, node: Any, stands: list) -> None:
        self.node, self.stands = node, stands

    def again(self, node: Any, natives: list) -> Traced:
        """The graph recorded anew on ``natives`` (written through ``.data`` since)."""
        _, _, reference, static, _ = node.saved
        return _trace(reference, natives, self.stands, static)[1]

    def gradients(self, g: Tensor) -> tuple:
        """The gradients of the composite's present inputs from its output's ``g``."""
        from tensorweaver.autograd.engine import run

        root = Tensor(g.native, g.backend, g.dtype)
        root._node, root._requires_grad = self.node, True
        stands = [s for s in self.stands if s is not None]
        wanted = [s for s in stands if s._requires_grad]
        # (retained: a backward with retain_graph runs it again; it goes with this node)
        found = run([root], [g], True, False, wanted)
        return tuple([found.get(id(s)) if s._requires_grad else None for s in stands])


def _stand_in(t: Tensor | None, native: Any, requires_grad: bool) -> Tensor | None:
    """A leaf of ``native`` in ``t``'s place (None for an absent argument)."""
    if t is None:
        return None
    stand = Tensor(native, t.backend, t.dtype)
    stand._requires_grad = requires_grad
    return stand


def _trace(
    reference: Callable[..., Any], natives: list, like: list, static: tuple
) -> tuple[Tensor, Traced]:
    """``reference`` on stand-ins of ``natives`` (each as ``like``'s tensor), recording its
    graph: its output and the :class:`Traced` of it."""
    stands = [
        _stand_in(t, native, t is not None and t._requires_grad) for t, native in zip(like, natives)
    ]
    with HooksOff(), enable_grad():  # (its inner nodes pack nothing: the one node does)
        out = reference(*stands, *static)
    return out, Traced(out._node, stands)


def _traced(
    name: str,
    reference: Callable[..., Any],
    tensors: tuple,
    static: tuple,
    dtype: Any,
    given: tuple,
    slots: tuple | None,
) -> Tensor:
    """``name`` by its reference, recorded as one node (:class:`Traced`, :class:`AsRead`)."""
    natives = [None if t is None else t.native for t in tensors]
    out, traced = _trace(reference, natives, list(tensors), static)
    reads = _UNPACKED if SAVED_TENSORS_HOOKS else _reads(name, tensors)
    saved = AsRead(traced, natives, reads)
    out = apply("fused", out.native, dtype, given, (name, saved, reference, static, slots))
    if out._node is not None:
        _convolution_node(out._node, tensors, reference, static)
    return out


def _convolution_node(node: Any, tensors: tuple, reference: Callable, static: tuple) -> None:
    """Keep what a convolution's ``node`` needs beyond its own: the numbers PyTorch's
    ConvolutionBackward0 saves (:data:`CONVOLUTION_ARGUMENTS`) and, under
    ``saved_tensors_hooks``, its input and weight packed (:func:`_pack_read`)."""
    bias = tensors[2]
    arguments = (reference, static, None if bias is None else tuple(bias.shape), False)
    CONVOLUTION_ARGUMENTS[weakref.ref(node, CONVOLUTION_ARGUMENTS.pop)] = arguments
    if SAVED_TENSORS_HOOKS:
        _pack_read(node, tensors)


#: The arguments of each convolution's node (its reference, its static arguments, its
#: bias's shape, None without one, and whether it is the node of the gradients, PyTorch's
#: ConvolutionBackwardBackward0), by a weak reference to the node that drops its entry when
#: the node goes: PyTorch's nodes keep the numbers they saved once backward freed them
#: (:func:`convolution_saved`).
CONVOLUTION_ARGUMENTS: dict[weakref.ref, tuple] = {}

#: PyTorch's ConvolutionBackward0's and ConvolutionBackwardBackward0's saved attributes
#: (autograd/grad_fn.py reads them).
CONVOLUTION_SAVED = (
    "_saved_stride", "_saved_padding", "_saved_dilation", "_saved_groups",
    "_saved_transposed", "_saved_output_padding", "_saved_bias_sym_sizes_opt",
    "_saved_input", "_saved_weight", "_saved_grad_output",
)  # fmt: skip

#: The tensors each node saves, in the order of its inputs.
_SAVED_TENSORS = {
    False: ("_saved_input", "_saved_weight"),
    True: ("_saved_grad_output", "_saved_input", "_saved_weight"),
}


def convolution_saved(node: Any, attribute: str) -> Any:
    """``attribute`` of :data:`CONVOLUTION_SAVED` as PyTorch's ConvolutionBackward0 (or
    ConvolutionBackwardBackward0) for the convolution's ``node`` gives it (a 1-D one's
    arguments as given, not over a height of one); None where ``node`` is not a
    convolution's or its PyTorch node saves no ``attribute``. Its tensors: what its backward
    reads (unpacked, under ``saved_tensors_hooks``); once backward freed them, PyTorch's
    RuntimeError."""
    arguments = CONVOLUTION_ARGUMENTS.get(weakref.ref(node))
    if arguments is None:
        return None
    reference, static, bias, double = arguments
    tensors = _SAVED_TENSORS[double]
    if attribute in tensors:
        i = tensors.index(attribute)
        return node.saved[1].saved_tensors[i] if double else _saved_operand(node, i)
    if double and attribute == "_saved_bias_sym_sizes_opt" or attribute not in CONVOLUTION_SAVED:
        return None
    if len(static) == 5:  # (conv_transpose's order)
        stride, padding, output_padding, groups, dilation = static
    else:
        (stride, padding, dilation, groups), output_padding = static, (0,) * len(static[0])
    if type(reference) is Line:  # (its first axis: the height of one it runs over)
        stride, padding, dilation = stride[1:], padding[1:], dilation[1:]
        output_padding = output_padding[1:]
    return {
        "_saved_stride": tuple(stride),
        "_saved_padding": tuple(padding),
        "_saved_dilation": tuple(dilation),
        "_saved_groups": groups,
        "_saved_transposed": len(static) == 5,
        "_saved_output_padding": tuple(output_padding),
        "_saved_bias_sym_sizes_opt": (0,) if bias is None else bias,
    }.get(attribute)


def _saved_operand(node: Any, i: int) -> Tensor:
    """Input ``i`` of a convolution's ``node`` (0: the input, 1: the weight) as its backward
    reads it; PyTorch's RuntimeError once backward freed it."""
    from tensorweaver.autograd.graph import PACKED, _checked, _Packed

    if node.parents is None:
        raise RuntimeError(SAVED_TENSOR_FREED)
    kept = node.inputs[i]
    return _checked(PACKED[id(node)](kept.value)) if type(kept) is _Packed else kept


#: What a convolution's node reads of its (input, weight, bias) under saved_tensors_hooks:
#: its inputs as backward gives them, unpacked (:func:`_pack_read`), and no bias.
_UNPACKED = (True, True, None)


def _pack_read(node: Any, tensors: tuple) -> None:
    """Pass the input and weight that PyTorch's ConvolutionBackward0 saves through the
    innermost pack hook, in its order: backward reads what unpack gives in their place
    (autograd/graph.py ``unpacked``), with no version check, as PyTorch's node."""
    from tensorweaver.autograd.graph import _Packed, _unpacks_through

    with HooksOff() as (pack, unpack):
        values = [pack(t) for t in tensors[:2]]
    inputs = node.inputs
    node.inputs = (*[_Packed(t, value) for t, value in zip(inputs, values)], *inputs[2:])
    _unpacks_through(node, unpack)


def _recorded(given: tuple) -> bool:
    """Whether a node will be recorded for inputs ``given`` (else ``_reads``'s aliases are
    not made: an inference forward pays nothing for them)."""
    return is_grad_enabled() and any(t.requires_grad for t in given)


def _reads(name: str, tensors: tuple) -> tuple:
    """For each of ``tensors`` (every composite of :data:`READS_INPUTS` takes three: input,
    weight, bias), what PyTorch's node for ``name`` reads of it at backward: the tensor
    itself (True: a ``.data =`` rebinding reaches it), an alias of its memory (a view PyTorch
    saves, which sees in-place writes but keeps the old memory when ``.data`` is rebound:
    linear's ``weight.t()``, and its input reshaped unless 2-d), or None (nothing: a bias;
    the kernel's kept values)."""
    if name != "linear":
        return (True, True, None)  # (a constant: a convolution's call pays nothing for it)
    x, w = tensors[0], tensors[1]
    return (True if x.dim() == 2 else x.detach(), w.detach(), None)


def _saved_again(node: Any, inputs: tuple) -> Any:
    """What the fused kernel of ``node`` saves when run again on ``inputs``."""
    slots = node.saved[4]
    tensors = inputs if slots is None else fill_slots(slots, inputs)
    return _rerun(node, inputs[0].backend, [None if t is None else t.native for t in tensors])


def _rerun(node: Any, backend: Any, natives: list) -> Any:
    """What the fused kernel of ``node`` saves when run again on ``natives``."""
    name, _, reference, static, _ = node.saved
    if type(reference) is Line:
        return _line_kernel(fused_kernel(backend, name), backend, natives, static)[1]
    return fused_kernel(backend, name)(*natives, *static)[1]


def fused_backward(node: Any, g: Tensor) -> tuple:
    name, saved, reference, static, slots = node.saved
    if is_grad_enabled():  # create_graph
        return _fused_double_backward(node, g)
    if type(saved) is FromOutput:
        saved = saved.saved
    elif type(saved) is AsRead or type(saved) is Resaved:
        saved = saved.current(node)
        if type(saved) is Traced:
            return saved.gradients(g)
    inputs = node.inputs
    backend = inputs[0].backend
    # Plain loops: this runs once per fused node in every backward pass.
    needs = tuple([p is not None for p in node.parents])
    attribute = _BACKWARDS.get(name)
    if attribute is None:
        attribute = _BACKWARDS[name] = sys.intern("fused_" + name + "_backward")
    fused_grad = getattr(backend, attribute)
    if type(reference) is Line:
        return _line_backward(fused_grad, saved, g, needs, inputs, slots)
    if slots is None:
        natives = fused_grad(saved, g.native, needs)
    else:
        natives = fused_grad(saved, g.native, fill_slots(slots, needs, False))
        natives = [n for n, s in zip(natives, slots) if s]
    return tuple(
        [None if n is None else Tensor(n, backend, t.dtype) for n, t in zip(natives, inputs)]
    )


#: ``"fused_" + name + "_backward"`` for each composite's name, built once: an interned
#: attribute name finds the backend's method through CPython's attribute cache (a fresh
#: string walks its classes), as ``ops.fusion.fused_kernel``'s.
_BACKWARDS: dict[str, str] = {}


def _fused_double_backward(node: Any, g: Tensor) -> tuple:
    """``fused_backward`` under ``create_graph``: a gradient that records its own graph."""
    name, saved, reference, static, slots = node.saved
    inputs = node.inputs
    if type(saved) is Resaved:
        inputs = saved.inputs(node)
    elif type(saved) is FromOutput:
        # The output attached to this node: gradient that reaches it from its later uses
        # and from this formula goes back through this node once, as in PyTorch.
        return (saved.rule(node.output(saved.out), g, *static),)
    if name in TRACED:
        return _convolution_double_backward(node, g)
    from tensorweaver.autograd.engine import grad

    # Differentiate the reference, which records a graph. It runs on stand-ins of the
    # inputs, and grad() is taken with respect to them: partial derivatives. With respect to
    # the inputs themselves it would give total ones, counting twice a path from one input to
    # another (a linear's bias reaching its input through an RNN's hidden state).
    with enable_grad():
        stand = [t.view_as(t) if t.requires_grad else t for t in inputs]
        wanted = [t for t in stand if t.requires_grad]
        y = reference(*(stand if slots is None else fill_slots(slots, stand)), *static)
    if isinstance(y, tuple):  # the outputs after the first carry no gradient
        y = y[0]
    found = iter(grad(y, wanted, g, create_graph=True, allow_unused=True))
    return tuple(next(found) if t.requires_grad else None for t in inputs)


def _convolution_double_backward(node: Any, g: Tensor) -> tuple:
    """The gradients of a convolution's node (one of :data:`TRACED`) from ``g`` that record
    their own graph, as PyTorch's ConvolutionBackwardBackward0: one node whose outputs are
    the input's, the weight's and the bias's gradients (``output_nr`` 0, 1, 2), which saves
    ``g``, the input and the weight (under ``saved_tensors_hooks`` packed in that order) and
    whose backward reads them as they are then (a write through ``.data`` since reaches it),
    or what unpack gives for them. The gradients are computed here on stand-ins
    (:func:`_gradients_of`), whose graph that backward runs again while they are unchanged."""
    from tensorweaver.ops.several_outputs import several_outputs

    _, read, reference, static, _ = node.saved
    inputs = node.inputs
    tensors = (g, inputs[0], inputs[1])
    now = read.read(node)[0]
    natives = [g.native, now[0], now[1]]
    stands = [_stand_in(t, n, t._requires_grad) for t, n in zip(tensors, natives)]
    wanted = [i for i in (0, 1) if inputs[i]._requires_grad]
    with HooksOff():
        found = _gradients_of(wanted, reference, *stands, *static) if wanted else ()
    outputs: list = [None, None, None]
    for i, gi in zip(wanted, found):
        outputs[i] = Tensor(gi.native, gi.backend, gi.dtype)
    if len(inputs) > 2 and inputs[2]._requires_grad:  # (the output's channels are axis 1)
        outputs[2] = g.detach().sum((0, *range(2, g.dim())))
    state = (reference, static, natives, stands, dict(zip(wanted, found)))
    several_outputs(_DOUBLE_NAME, tensors, outputs, _second_order, state)
    made = next((t._node for t in outputs if t is not None and t._node is not None), None)
    if made is not None:  # (its group's: the one node of them all)
        arguments = (reference, static, None, True)
        CONVOLUTION_ARGUMENTS[weakref.ref(made.view, CONVOLUTION_ARGUMENTS.pop)] = arguments
    return tuple(outputs[: len(inputs)])


#: The composite name of the node of a convolution's gradients: PyTorch's
#: ConvolutionBackwardBackward0.
_DOUBLE_NAME = "ConvolutionBackwardBackward0"


def _second_order(ctx: Any, ggx: Any, ggw: Any, ggb: Any) -> tuple:
    """The rule of a convolution's gradients' node (:func:`_convolution_double_backward`):
    the gradients of ``g``, the input and the weight from those of the input's (``ggx``),
    the weight's (``ggw``) and the bias's (``ggb``) gradients (None: not used)."""
    from tensorweaver.autograd.engine import grad, run

    g, x, w = ctx.saved_tensors
    reference, static, natives, stands, found = ctx.state
    needs = ctx.needs_input_grad
    create_graph = is_grad_enabled()
    used = [(i, gg) for i, gg in ((0, ggx), (1, ggw)) if gg is not None]
    if not x.numel():  # (an empty batch: no gradient through them, as PyTorch's)
        used = []
    result: list = [None, None, None]
    if used:
        now = (g.native, x.native, w.native)
        if create_graph or any([a is not b for a, b in zip(now, natives)]):
            # (recorded anew: in the graph of g, x and w; or on what they hold now)
            if create_graph:
                stands = [t.view_as(t) if t.requires_grad else t.detach() for t in (g, x, w)]
            else:
                stands = [_stand_in(t, t.native, need) for t, need in zip((g, x, w), needs)]
            with enable_grad(), HooksOff():  # (its inner nodes pack nothing)
                wanted = [i for i, _ in used]
                found = dict(zip(wanted, _gradients_of(wanted, reference, *stands, *static)))
        roots = [found[i] for i, _ in used]
        grads = [gg for _, gg in used]
        targets = [s for s, need in zip(stands, needs) if need]
        if create_graph:
            got = iter(grad(roots, targets, grads, create_graph=True, allow_unused=True))
            result = [next(got) if need else None for need in needs]
        else:  # (retained: a backward with retain_graph runs it again)
            got = run(roots, grads, True, False, targets)
            result = [got.get(id(s)) if need else None for s, need in zip(stands, needs)]
    if ggb is not None and needs[0]:  # the bias's: g summed over all but its channels
        spread = ggb.reshape(1, -1, *(1,) * (g.dim() - 2)).expand(g.shape)
        result[0] = spread if result[0] is None else result[0] + spread
    return tuple(result)


def _gradients_of(
    wanted: list, reference: Callable, g: Tensor, x: Tensor, w: Tensor, *static: Any
) -> tuple:
    """The gradients of the convolution ``reference``'s input (0) and weight (1), those of
    ``wanted``, from its output's ``g``, recording their graph on ``g``, ``x`` and ``w``."""
    from tensorweaver.autograd.engine import grad

    operands = [x, w]
    with enable_grad():
        y = reference(x, w, None, *static)
        return grad(y, [operands[i] for i in wanted], g, create_graph=True)
