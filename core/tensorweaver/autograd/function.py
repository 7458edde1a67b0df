"""User-defined differentiable operations, as ``torch.autograd.Function``.

Both of PyTorch's styles: ``forward(ctx, *args)``, or ``forward(*args)`` with a separate
``setup_context(ctx, inputs, output)``. ``ctx.mark_dirty`` hands back an input modified in
place as the output (its history moves to the Function's node); ``once_differentiable``
marks a backward that may run only once (its results refuse a second differentiation).
An output that views an input (or is one, returned as it is) is a view of that input, as
PyTorch's: changing it in place, or using it after that input changed, raises. After a
backward without ``retain_graph`` the ctx's saved tensors are freed, but the node stays:
a backward that reads none of them may run again, as PyTorch's. A call with several
differentiable outputs is one node, as PyTorch's: every output's ``grad_fn`` is it, and
``backward`` runs once per pass with every output's gradient.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from typing import Any, Callable

from tensorweaver.autograd.mode import _restore, _switched, is_grad_enabled, no_grad
from tensorweaver.autograd.node import (
    SAVED_TENSORS_HOOKS,
    HooksOff,
    InputShape,
    Node,
    Slot,
    output_node,
    shape_of,
)
from tensorweaver.ops.creation import zeros_like, zeros_like_shape
from tensorweaver.tensor import _NO_GRAD_VIEW_CHANGED, _NO_GRAD_VIEW_WRITTEN, Tensor

_FREED = (
    "Trying to backward through the graph a second time, or to read saved tensors after "
    "they have already been freed: pass retain_graph=True to the first backward() or "
    "autograd.grad() if you need them again"
)


class FunctionCtx:
    """What ``forward`` leaves for ``backward``: saved tensors and any attributes it sets."""

    def __init__(self, needs_input_grad: tuple) -> None:
        self.needs_input_grad = needs_input_grad
        self._saved: tuple = ()
        # Per output: a weak reference to its graph node, once apply() has recorded one.
        self._nodes: list = []
        self._freed = False  # backward ran without retain_graph: saved tensors are gone
        # The unpack hook of the saved_tensors_hooks that packed the saved tensors, if any.
        self._unpack: Callable | None = None
        # Per saved tensor and each tensor whose memory it shares: (index, the tensor or a
        # weak reference to it, its version when apply() ended), checked when backward reads
        # ``saved_tensors``, as PyTorch checks its saved variables' versions on unpacking.
        self._versions: tuple = ()
        self._name = ""
        self.materialize_grads = True
        # Per output that is a view (or an input returned as it is) with a node: its version
        # as apply() hands it back. A use of it in autograd at another version raises.
        self._view_versions: dict[int, int] = {}

    def save_for_backward(self, *tensors: Any) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type "
                    f"{type(t).__name__}: keep other values as attributes of ctx (ctx.k = k)"
                )
        self._saved = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Keep tensors for a ``jvp`` staticmethod. Forward-mode derivatives here come from
        differentiating ``backward`` twice (tw.func.jvp), so the Function's ``jvp`` is not
        called: this checks what PyTorch checks (raising its AssertionError) and keeps
        nothing else."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise AssertionError(
                    f"save_for_forward expects all arguments to be tensors, but argument {i} "
                    f"is of type {type(t).__name__}: keep other values as attributes of ctx"
                )

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``; an output among them comes back
        attached to the Function's node, so that a backward differentiated again (under
        ``create_graph``) goes through the Function again, as PyTorch's saved outputs do."""
        if self._freed:
            raise RuntimeError(_FREED)
        if self._versions:
            self._check_versions()
        if not self._nodes:
            return self._saved
        if self._unpack is not None:
            return self._unpacked_by_hook()
        return tuple(self._unpacked(t) for t in self._saved)

    def _pack(self, outputs: list) -> None:
        """Pass each saved tensor (an output as ``outputs`` has it) through the innermost
        saved_tensors_hooks' pack, keeping only what it returns, as PyTorch's saved
        variables do; :attr:`saved_tensors` unpacks them."""
        from tensorweaver.autograd.graph import _Packed

        packed = []
        with HooksOff() as (pack, self._unpack):  # (what the hook computes saves nothing)
            for t in self._saved:
                if type(t) is _SavedOutput:
                    out = outputs[t.index]
                    t = (t.index, _Packed(out, pack(out)))
                elif t is not None:
                    parent = t._node or (t if t.requires_grad else None)
                    t = (parent, _Packed(t, pack(t)))
                packed.append(t)
        self._saved = tuple(packed)
        self._versions = ()  # (PyTorch checks no version of a packed tensor: unpack's is read)

    def _unpacked_by_hook(self) -> tuple:
        """The saved tensors from the unpack hook: an input in the graph where it was, an
        output attached to the Function's node (as :meth:`_unpacked` gives them)."""
        from tensorweaver.autograd.graph import _checked, _restored

        tensors = []
        for t in self._saved:
            if t is not None:
                where, kept = t
                value = self._unpack(kept.value)
                if type(where) is int:  # an output's index
                    value = self._unpacked(_SavedOutput(where, _checked(value)))
                else:
                    value = _restored(value, kept, where)
                t = value
            tensors.append(t)
        return tuple(tensors)

    def _check_versions(self) -> None:
        """Raise where a saved tensor (or a tensor sharing its memory: its base, what it was
        detached from) changed in place since forward, as PyTorch checks on unpacking."""
        for i, t, version in self._versions:
            if type(t) is weakref.ReferenceType:  # (not a Tensor subclass: nn.Parameter)
                t = t()
            if t is not None and t._version != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: saved tensor {i} of {self._name}Backward (shape "
                    f"{list(t.shape)}) is at version {t._version}; expected version {version} "
                    "instead. Use an out-of-place op (x = x + 1, not x += 1) or save a .clone()"
                )

    def _unpacked(self, t: Any) -> Any:
        if type(t) is not _SavedOutput:
            return t
        node = self._nodes[t.index]()
        if node is not None:  # (Node.output: a later write through the output's .data reaches it)
            return node.output(t.native, t.dtype)
        return Tensor(t.native, t.backend, t.dtype)

    def _release(self) -> None:
        """Free the saved tensors: a backward through one of the outputs' nodes ran without
        retain_graph (the engine calls this once its pass is over, so that the pass runs
        every output's node it reaches). PyTorch's one node per Function frees them then,
        whichever outputs the pass went through."""
        self._freed, self._saved, self._versions = True, (), ()

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self.non_differentiable = {id(t) for t in tensors}

    def mark_dirty(self, *tensors: Any) -> None:
        """Say that ``forward`` modified these inputs in place (and returns them)."""
        self.dirty = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` gets None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = value


#: The names of the grad_fn classes of Function subclasses not made yet (:func:`_ctx_grad_fns`).
_PENDING_NAMES: list = []
#: The base of those classes, once made (it subclasses grad_fn.py's GradFn).
_CTX_GRAD_FN: list = []
#: Function subclass -> its own grad_fn class (PyTorch's ``_backward_cls``), made when its
#: first node's grad_fn is read.
_BACKWARD_CLASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _ctx_attribute(self: Any, attribute: str) -> Any:
    """A public attribute of a Function node's ctx, else GradFn's own (``_saved_*``), else
    one set on the ctx (by ``forward`` or through this object)."""
    node = self._node
    if node.op != "function":
        return super(_CTX_GRAD_FN[0], self).__getattr__(attribute)
    if not attribute.startswith("_"):
        return getattr(node.saved[1], attribute)
    try:
        return super(_CTX_GRAD_FN[0], self).__getattr__(attribute)
    except AttributeError:
        return getattr(node.saved[1], attribute)


def _ctx_set(self: Any, attribute: str, value: Any) -> None:
    """Set an attribute on a Function node's ctx, which PyTorch's ``grad_fn`` is (``backward``
    reads it); GradFn's own slot stays the object's."""
    if attribute == "_node" or self._node.op != "function":
        object.__setattr__(self, attribute, value)
    else:
        setattr(self._node.saved[1], attribute, value)


def _own_class(klass: type, node: Any) -> Any:
    """The grad_fn object of ``node``, of its Function subclass's own class (PyTorch's
    ``_backward_cls``: two Function classes of one name have distinct ones). grad_fn.py
    ``grad_fn_of`` finds the class by the node's name; this picks the Function's."""
    function = node.saved[0] if node.op == "function" else None
    own = klass if function is None else _BACKWARD_CLASSES.get(function)
    if own is None:
        attributes = {"__slots__": (), "_forward_cls": function}
        own = _BACKWARD_CLASSES[function] = type(klass.__name__, (_CTX_GRAD_FN[0],), attributes)
    made = object.__new__(own)
    object.__setattr__(made, "_node", node)
    return made


def _ctx_grad_fns() -> None:
    """Make the ``grad_fn`` class of the Function subclasses of :data:`_PENDING_NAMES`
    (autograd/grad_fn.py ``grad_fn_of`` makes one per name) one that reads and writes their
    ctx's attributes (``needs_input_grad``, ``saved_tensors``, what ``forward`` set on it),
    as PyTorch's ``BackwardCFunction`` is the ctx itself, and makes each node's object of its
    Function subclass's own class (:func:`_own_class`). Made at the first ``apply`` after
    their definition: the core's own Functions are defined before grad_fn.py can load."""
    from tensorweaver.autograd.grad_fn import _CLASSES, GradFn

    if not _CTX_GRAD_FN:
        reader = {"__slots__": (), "__getattr__": _ctx_attribute, "__setattr__": _ctx_set}
        _CTX_GRAD_FN.append(type("BackwardCFunction", (GradFn,), reader))
    base = _CTX_GRAD_FN[0]
    for name in _PENDING_NAMES:
        if not issubclass(_CLASSES.get(name, GradFn), base):
            _CLASSES[name] = type(name, (base,), {"__slots__": (), "__new__": _own_class})
    _PENDING_NAMES.clear()


def __getattr__(name: str) -> Any:
    """``BackwardCFunction``: the base class of every custom Function's ``grad_fn``, as
    PyTorch's (made on first use: grad_fn.py cannot load before this module)."""
    if name != "BackwardCFunction":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _ctx_grad_fns()
    return _CTX_GRAD_FN[0]


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call
    ``apply``. ``backward`` returns one gradient (or None) per argument of ``forward``."""

    #: True on the core's own Functions of several outputs whose arguments are all tensors
    #: and whose ``backward`` returns a tuple of one tensor (of its input's shape, or one
    #: that sums to it) or None per argument, with ``materialize_grads`` off: their call's
    #: node hands that tuple on unchecked (:func:`function_backward`). The checks are for a
    #: user's ``backward``; they cost 2-3 us of every backward of a linalg call's node.
    _well_formed = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _PENDING_NAMES.append(f"{cls.__name__}Backward")

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        raise NotImplementedError("a Function subclass must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise NotImplementedError("a Function subclass must define backward(ctx, ...)")

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        """Override (with a ``forward`` that takes no ctx) to save what backward needs."""
        raise NotImplementedError("setup_context is not overridden")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"{type(self).__name__}: calling an instance of an autograd.Function (the legacy, "
            "non-static forward) is not supported: call the class's apply(...) instead"
        )

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if _PENDING_NAMES:
            _ctx_grad_fns()
        if kwargs or cls.setup_context is not Function.setup_context:
            args = _bound(cls, args, kwargs)
        tensors = tuple([a for a in args if isinstance(a, Tensor)])
        # The inputs as they enter: a dirty input's gradient follows its history before.
        entering = {id(t): t._snapshot() for t in tensors}
        ctx = FunctionCtx(tuple([isinstance(a, Tensor) and a.requires_grad for a in args]))
        tokens = _switched(False)  # no_grad(), without its object (this runs per call)
        try:
            if cls.setup_context is Function.setup_context:
                result = cls.forward(ctx, *args)
            else:
                result = cls.forward(*args)
                cls.setup_context(ctx, args, result)
        finally:
            _restore(tokens)
        outputs = result if isinstance(result, tuple) else (result,)
        record = is_grad_enabled() and any(t.requires_grad for t in tensors)
        skip = getattr(ctx, "non_differentiable", set())
        dirty = getattr(ctx, "dirty", set())
        if dirty and record:
            for t in tensors:
                if id(t) in dirty and t.requires_grad and entering[id(t)]._node is None:
                    raise RuntimeError(
                        f"{cls.__name__}: a leaf Variable that requires grad has been used in "
                        "an in-place operation (forward marked it dirty); clone it first"
                    )
        if dirty:
            tensors = tuple(entering[id(t)] if id(t) in dirty else t for t in tensors)
        wrapped, nodes = [], []
        # A tensor returned more than once is one output, as in PyTorch: the same tensor
        # each time, its node that of its last place (the others' gradients are zeros).
        last = {id(o): i for i, o in enumerate(outputs)} if len(outputs) > 1 else None
        group = None
        if last and record and tensors:
            group = _group_node(cls, ctx, args, tensors, outputs, last, skip)
        made: dict[int, Tensor] = {}
        viewing: list[int] = []  # the outputs that are views, with a node
        for i, out in enumerate(outputs):
            if not isinstance(out, Tensor):
                wrapped.append(out)
                nodes.append(_dead)
                continue
            # A fresh tensor (forward may return an input itself), but a dirty input is
            # handed back itself, its history now this node.
            target = made.get(id(out)) if last else None
            if target is None:
                target = out if id(out) in dirty else Tensor(out.native, out.backend, out.dtype)
                if last:
                    made[id(out)] = target
            node = None
            if last and last[id(out)] != i:
                pass  # an earlier place of a tensor returned again: no node of its own
            elif record and id(out) not in skip and out.dtype.kind in "fc" and tensors:
                if group is None:
                    node = _light(Node("function", tensors, (cls, ctx, args, i, outputs)))
                else:
                    saved = (cls, ctx, None, i, len(outputs))
                    node = output_node("function", group, InputShape(target), saved)
                target._node = node
                target._requires_grad = True
                if id(out) not in dirty:
                    if _link_as_view(target, out, tensors, f"Output {i} of {cls.__name__}"):
                        viewing.append(i)
                elif target._view_of is not None:
                    # a dirty view: its base's history goes through this node too, as the
                    # write-back of an in-place op on a view records it (forward wrote the
                    # values already, without a graph)
                    target._pass_on(recorded=True)
            elif id(out) not in dirty and not (last and last[id(out)] != i):
                # no node: a plain view still (of a graph's input, non-differentiable: as
                # one made under no_grad, PyTorch's refusals)
                _link_as_view(target, out, tensors, None, record)
            wrapped.append(target)
            nodes.append(_dead if node is None else weakref.ref(node))
        if viewing:  # (their versions once every output is in place)
            ctx._view_versions = {i: wrapped[i]._version for i in viewing}
        if record and ctx._saved:
            # Saved outputs are kept as arrays, not as tensors: a tensor would hold its node,
            # which holds the ctx (a cycle that only the garbage collector frees).
            # An input returned unchanged is saved as an input, as in PyTorch (a dirty one's
            # history is this node now: it is saved as an output).
            inputs = {id(a) for a in args if isinstance(a, Tensor) and id(a) not in dirty}
            where = {
                id(o): i
                for i, o in enumerate(outputs)
                if isinstance(o, Tensor) and id(o) not in inputs
            }
            ctx._saved = tuple(
                _SavedOutput(where[id(t)], t) if id(t) in where else t for t in ctx._saved
            )
            ctx._nodes = nodes
            ctx._name = cls.__name__
            ctx._versions = _watched(ctx._saved, wrapped)
            if SAVED_TENSORS_HOOKS:
                ctx._pack(wrapped)
        return tuple(wrapped) if isinstance(result, tuple) else wrapped[0]


#: forward's signature and, where it has only positional parameters, their number (then
#: ``apply`` with exactly that many positional arguments needs no binding), by forward function
#: (read for every apply of a setup_context style).
_SIGNATURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _group_node(
    cls: type[Function],
    ctx: FunctionCtx,
    args: tuple,
    tensors: tuple,
    outputs: tuple,
    last: dict,
    skip: set,
) -> Node | None:
    """The one node of a call whose forward returned several differentiable outputs (None
    for fewer): its rule calls ``backward`` once with every output's gradient, as PyTorch's
    node does; each output gets a node of its own that hands its gradient on to it
    (:func:`output_node`), which is where that output's hooks and view checks live."""
    count = 0
    for i, out in enumerate(outputs):
        if (
            isinstance(out, Tensor)
            and last[id(out)] == i
            and id(out) not in skip
            and out.dtype.kind in "fc"
        ):
            count += 1
    if count < 2:
        return None
    return _light(Node("function", tensors, (cls, ctx, args, None, outputs)))


def _bound(cls: type[Function], args: tuple, kwargs: dict) -> tuple:
    """``apply``'s arguments given by name, placed by ``forward``'s signature, as PyTorch
    does: each one an input of the Function (``backward`` returns a gradient for it); with
    ``setup_context``, the defaults of the parameters after them are filled in too."""
    with_ctx = cls.setup_context is Function.setup_context
    known = _SIGNATURES.get(cls.forward)
    if known is None:
        signature = inspect.signature(cls.forward)
        kinds = [p.kind for p in signature.parameters.values()]
        count = len(kinds) if all(k in _POSITIONAL for k in kinds) else None
        known = _SIGNATURES[cls.forward] = (signature, count)
    signature, count = known
    if not kwargs and len(args) == count and not with_ctx:
        return args  # (every parameter given by position: binding would change nothing)
    bound = signature.bind(*((None,) if with_ctx else ()), *args, **kwargs)
    if not with_ctx:
        bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(
            f"{cls.__name__}.apply: forward's parameters {', '.join(bound.kwargs)} cannot be "
            "given by name: give the parameters before them too, or make them positional"
        )
    return bound.args[1:] if with_ctx else bound.args


def apply_fresh(cls: type[Function], *args: Any) -> Any:
    """``cls.apply(*args)`` for the core's own Functions whose ``forward(ctx, ...)`` returns
    one new floating-point tensor, or a tuple of two or more distinct ones (no view, no
    input, nothing marked dirty or non-differentiable), and saves only inputs: the same
    nodes and ctx without ``apply``'s general bookkeeping (torch:cpu nll_loss at (80, 1000),
    forward and backward: 108 -> 96 us; the word-LM LSTM's three unpacked outputs, forward:
    29.8 -> 20.1 us, loaded machine)."""
    record = is_grad_enabled()
    needs = tuple([isinstance(a, Tensor) and a.requires_grad for a in args])
    ctx = FunctionCtx(needs)
    tokens = _switched(False)
    try:
        result = cls.forward(ctx, *args)
    finally:
        _restore(tokens)
    if not record or True not in needs:
        return result
    tensors = tuple([a for a in args if isinstance(a, Tensor)])
    if type(result) is tuple:  # one node for the call, one per output (as _group_node's)
        group = _light(Node("function", tensors, (cls, ctx, args, None, result)))
        wrapped, nodes = [], []
        for i, r in enumerate(result):
            out = Tensor(r.native, r.backend, r.dtype)
            saved = (cls, ctx, None, i, len(result))
            node = out._node = output_node("function", group, InputShape(out), saved)
            out._requires_grad = True
            wrapped.append(out)
            nodes.append(weakref.ref(node))
    else:
        out = Tensor(result.native, result.backend, result.dtype)
        node = out._node = _light(Node("function", tensors, (cls, ctx, args, 0, (result,))))
        out._requires_grad = True
        wrapped, nodes = [out], [weakref.ref(node)]
    if ctx._saved:
        ctx._nodes = nodes
        ctx._name = cls.__name__
        ctx._versions = _watched(ctx._saved, wrapped)
        if SAVED_TENSORS_HOOKS:
            ctx._pack(wrapped)
    return tuple(wrapped) if type(result) is tuple else out


#: PyTorch's refusals for an output of a Function that is a view (of one of its inputs, of a
#: tensor made inside forward) or an input itself: changing it in place would bypass the
#: Function's backward, and so would using it once it changed by any other way (its base, a
#: ``detach()`` alias of it, an in-place op under no_grad).
_VIEW_WRITTEN = (
    "is a view and is being modified inplace: it is a view made inside the custom Function "
    "that returned it (or an input returned as it is), and the view's in-place history "
    "would replace that Function's backward, giving wrong gradients. Clone the Function's "
    "output first"
)
_VIEW_CHANGED = (
    "is a view and its base or another view of its base has been modified inplace: it is "
    "a view made inside the custom Function that returned it (or an input returned as it "
    "is), so its gradient through that Function no longer holds. Clone the Function's "
    "output first"
)


def _link_as_view(
    target: Tensor, out: Tensor, inputs: tuple, name: str | None, undifferentiated: bool = False
) -> bool:
    """Make ``target`` (the output handed back for ``out``) a view of what ``out`` views
    (an input, or a tensor forward made), or of the input ``out`` is, as PyTorch's output
    is, with PyTorch's refusals of an in-place change of it and of its use once it changed
    (``name``: "Output i of F"; None where the Function recorded no node for it: a plain
    view of an input, refused as a view made under no_grad where it was, or where the
    Function recorded a graph but the output is not differentiable: ``undifferentiated``).
    Returns whether it linked one."""
    if out._view_of is None and out._alias_of is None and all(out is not t for t in inputs):
        return False  # (the common case: a new tensor)
    given = {id(t) for t in inputs}
    if id(out) in given:  # an input returned as it is
        if name is None and not undifferentiated:
            # (under no_grad PyTorch's output is no view: it only shares the input's memory)
            target._share_memory_of(out)
            return False
        base, write, read = out, _write_whole, _read_whole
        t = out
    elif out._view_of is None:  # a detach() alias: PyTorch's output shares its memory only
        target._share_memory_of(out._alias_of)
        return False
    else:
        above = out._view_of
        t = _input_sharing_memory(above[0], inputs)
        if t is None and name is None:
            return False  # a view of forward's own tensor, without a graph: nothing to refuse
        base, write, read = above[:3]
    if name is not None:
        refused: tuple | None = (f"{name} {_VIEW_WRITTEN}", f"{name} {_VIEW_CHANGED}")
    elif t.requires_grad and (undifferentiated or not is_grad_enabled()):
        refused = (_NO_GRAD_VIEW_WRITTEN, _NO_GRAD_VIEW_CHANGED)
    else:
        refused = None
    target._view_of = (base, write, read) if refused is None else (base, write, read, refused)
    target._own_version = base._own_version  # (one counter, as a view's: see ops/views.py)
    if base._inference:  # (a view of an inference tensor is one, as ops/views.py's are)
        target._inference = True
    base._follow(target, read, None, None if refused is None else refused[1])
    return True


def _input_sharing_memory(t: Tensor | None, inputs: tuple) -> Tensor | None:
    """The input whose memory ``t`` (an output's base) is part of: an input on the chain of
    ``t``'s bases and ``detach()`` originals, or one whose own chain meets ``t`` (an
    ``as_strided`` view of an input views its base's memory)."""
    bases: dict[int, Tensor] = {}
    for x in inputs:  # each input, for itself and the tensors whose memory it is part of
        up: Tensor | None = x
        while up is not None and id(up) not in bases:
            bases[id(up)] = x
            up = up._view_of[0] if up._view_of is not None else up._alias_of
    while t is not None:
        if id(t) in bases:
            return bases[id(t)]
        t = t._view_of[0] if t._view_of is not None else t._alias_of
    return None


def check_view_output(node: Node, version: int) -> None:
    """PyTorch's refusal of a Function's view output (``node`` is its node) used in autograd
    at ``version``, where it changed since the Function returned it (by its base, another
    view, a ``detach()`` alias, an in-place op under no_grad): its history no longer holds."""
    cls, ctx, _, index, _ = node.saved
    made = ctx._view_versions.get(index)
    if made is not None and made != version:
        raise RuntimeError(f"Output {index} of {cls.__name__} {_VIEW_CHANGED}")


def _write_whole(base: Tensor, value: Tensor) -> Any:
    return base.copy_(value)


def _read_whole(base: Tensor) -> Tensor:
    return base


def _watched(saved: tuple, wrapped: list) -> tuple:
    """What the ctx checks for each saved tensor: the tensors whose in-place changes change
    it (it, the bases of a view, what it was detached from), each with its version as
    forward leaves it. A saved output is the output handed back, which holds the ctx through
    its node: it is made a ``detach()`` alias of a tensor the ctx watches instead (its
    changes reach that tensor, whose version moves, even once the output is gone; the link
    drops when nothing else holds it). One already a view or alias is watched through weak
    references (its bases may hold its node)."""
    entries = []
    for i, t in enumerate(saved):  # plain loops: this runs on every apply() that saves
        weak = False
        if type(t) is _SavedOutput:
            out = wrapped[t.index]
            if out._alias_of is None and out._view_of is None:
                t.memory = Tensor(out.native, out.backend, out.dtype)
                out._share_memory_of(t.memory)
                t = t.memory
            else:
                t, weak = out, True
        while t is not None:
            entries.append((i, weakref.ref(t) if weak else t, t._version))
            view = t._view_of
            t = view[0] if view is not None else t._alias_of
    return tuple(entries)


def _dead() -> None:
    """The weak reference of an output that has no node."""


class _SavedOutput:
    """An output of ``forward`` passed to ``save_for_backward``: its array, and which one."""

    __slots__ = ("index", "native", "backend", "dtype", "memory")

    def __init__(self, index: int, t: Tensor) -> None:
        self.index, self.native, self.backend, self.dtype = index, t.native, t.backend, t.dtype
        self.memory: Tensor | None = None  # what the output handed back is an alias of


def function_backward(node: Node, g: Any) -> tuple:
    """The rule for a Function's node: ``backward`` with the gradient of each output, zeros
    (or None, see ``set_materialize_grads``) for those that got none. ``g`` is one output's
    gradient for the node of a Function with one differentiable output, the gathered tuple
    for the node of a call with several; the node of one of those outputs hands its
    gradient on to that call's node (a Slot)."""
    cls, ctx, args, index, outputs = node.saved
    if args is None:  # an output's node: ``outputs`` is their count
        return (Slot(index, outputs, g),)
    if index is None and cls._well_formed:  # the call's node: ``g`` one gradient an output
        return cls.backward(ctx, *g)
    zeros = ctx.materialize_grads
    grads = [
        # zeros_like, not o * 0: an output holding inf or NaN must still get zeros
        got if got is not None else (_zeros(o) if zeros and _is_tensor(o) else None)
        for got, o in zip(g if index is None else _only(index, g, len(outputs)), outputs)
    ]
    result = cls.backward(ctx, *grads)
    result = result if isinstance(result, tuple) else (result,)
    name = f"{cls.__name__}Backward"
    if len(result) < len(args) or any(r is not None for r in result[len(args) :]):
        raise RuntimeError(
            f"function {name} returned an incorrect number of gradients (expected "
            f"{len(args)}, got {len(result)}): return one per argument of forward (None for "
            "non-tensors)"
        )
    for i, (a, r) in enumerate(zip(args, result)):
        if r is not None and not _is_tensor(a):
            raise RuntimeError(
                f"function {name} returned a gradient different than None at position "
                f"{i + 1}, but the corresponding forward input was not a Variable (it is a "
                f"{type(a).__name__}); return None there"
            )
        if r is not None and not isinstance(r, Tensor):
            raise RuntimeError(
                f"function {name}: expected Variable or None (got {type(r).__name__}) as the "
                f"gradient at position {i + 1}; return a tensor (or None)"
            )
    grads = tuple(r for a, r in zip(args, result) if _is_tensor(a))
    inputs = [a for a in args if _is_tensor(a)]
    # (only the gradients used are checked: PyTorch drops the others first)
    for i, (a, r, parent) in enumerate(zip(inputs, grads, node.parents)):
        if (
            parent is not None
            and r is not None
            and r.shape != a.shape
            and not _fits(a.shape, r.shape)
        ):
            raise RuntimeError(
                f"Function {name} returned an invalid gradient at index {i} - got "
                f"{list(r.shape)} but expected shape compatible with {list(a.shape)}: "
                "return a gradient of its input's shape (or one that sums to it)"
            )
    return grads


def _fits(shape: tuple, grad_shape: tuple) -> bool:
    """Whether a gradient of ``grad_shape`` sums to ``shape`` (``shape`` expands to it)."""
    if len(shape) > len(grad_shape):
        return False
    return all(n in (1, m) for n, m in zip(reversed(shape), reversed(grad_shape)))


def _only(index: int, g: Tensor, count: int) -> list:
    grads: list = [None] * count
    grads[index] = g
    return grads


def _light(node: Node) -> Node:
    """``node`` holding its inputs' (and tensor arguments') shapes, not the tensors, as
    PyTorch's node holds edges only: its rule reads no input (ctx saved what it needs), and
    an input held here would live as long as a cycle through a packed output."""
    cls, ctx, args, index, outputs = node.saved
    node.inputs = tuple([shape_of(t) for t in node.inputs])
    args = tuple([shape_of(a) if isinstance(a, Tensor) else a for a in args])
    node.saved = (cls, ctx, args, index, outputs)
    return node


def _is_tensor(value: Any) -> bool:
    """A tensor argument or output (or, once backward released the node, its shape)."""
    return isinstance(value, (Tensor, InputShape))


def _zeros(like: Any) -> Tensor:
    if type(like) is InputShape:  # (a released node's output: its layout is gone)
        return zeros_like_shape(like, like.shape)
    return zeros_like(like)


def once_differentiable(backward: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a Function's ``backward`` that cannot itself be differentiated: it runs
    without recording a graph, and under ``create_graph=True`` its results raise if a
    second backward reaches them, as PyTorch's do."""

    @functools.wraps(backward)
    def wrapper(ctx: FunctionCtx, *grads: Any) -> Any:
        with no_grad():
            result = backward(ctx, *grads)
        tracked = [g for g in grads if isinstance(g, Tensor) and g.requires_grad]
        if not is_grad_enabled() or not tracked:
            return result
        results = result if isinstance(result, tuple) else (result,)
        marked = tuple(
            DelayedError.apply(r, _ONCE, *tracked) if isinstance(r, Tensor) else r for r in results
        )
        return marked if isinstance(result, tuple) else marked[0]

    return wrapper


_ONCE = "trying to differentiate twice a function that was marked with @once_differentiable"


class DelayedError(Function):
    """The identity on ``value``, whose backward raises ``message``: what a backward that
    cannot be differentiated returns when a graph is being built over it (``grads`` link it
    to that graph): a ``once_differentiable`` one, a replay's (tw.compile)."""

    @staticmethod
    def forward(ctx: FunctionCtx, value: Tensor, message: str, *grads: Tensor) -> Tensor:
        ctx.message = message
        return value

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Any:
        raise RuntimeError(ctx.message)
