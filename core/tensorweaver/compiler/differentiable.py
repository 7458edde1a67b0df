"""A replayed forward that autograd can differentiate (``tw.compile(model)`` in training).

When a compiled function returns a tensor that requires grad and runs no backward itself
(a module's forward), the trace also runs the backward the tape would run for that output
(``tw.autograd.grad`` with a placeholder output gradient, recorded like the forward) and
builds two graphs: the forward, which also returns every value the backward needs, and the
backward, which takes those values and the output gradient and returns the gradient of
each input that requires grad (parameters, arguments). A replay joins them with an
autograd :class:`~tensorweaver.autograd.Function`, so ``loss.backward()`` after a replayed
forward runs the recorded backward graph and accumulates into ``.grad`` as eagerly.
The trace runs that backward during the call, so a forward whose graph holds a tensor hook
(``register_hook`` on a tensor it computes) runs eagerly: the recording would run the hook
there and again at the caller's backward (a hook may change the gradient, so the recording
cannot skip it), and a replay not at all.

The recorded backward is plain backend calls, with no graph of its own. A backward that
builds a graph (``create_graph=True``: a gradient penalty, a Hessian-vector product) runs
the step's function again eagerly on the same inputs and differentiates that, so the
gradient requires grad and differentiates again as eagerly. Only a forward without side
effects is run again: one that draws random numbers (dropout), writes into a tensor (a
buffer's running statistics) or rebinds an attribute gives a gradient that requires grad
and whose own backward raises, as ``torch.compile``'s does. The run again must see what the
replay saw (:class:`Rerun`): modules switched between train and eval since run in the
replay's mode, under its autocast state; a tensor the forward read changed in place since
(a parameter an optimizer stepped, a buffer, an argument), a rebound parameter, another
default dtype or backend raises, and so does a result that differs from the replay's (a
Python number the function reads changed): its gradient would belong to another forward.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from tensorweaver.amp import autocast_state, autocast_state_restored
from tensorweaver.autograd import grad as autograd_grad
from tensorweaver.autograd.function import DelayedError, Function, FunctionCtx
from tensorweaver.autograd.hooks import GRAD_HOOKS
from tensorweaver.autograd.mode import enable_grad, is_grad_enabled, no_grad
from tensorweaver.autograd.node import Node
from tensorweaver.compiler.draws import is_random
from tensorweaver.compiler.graph import Graph, GraphBuilder, Unsupported, leaves, tuple_source
from tensorweaver.compiler.recorder import HostRead, Recorder
from tensorweaver.compiler.saved import saved_inputs, saved_outputs
from tensorweaver.compiler.state import StepState, module_numbers, number_sig, read_sig
from tensorweaver.dtype_info import finfo
from tensorweaver.ops.creation import get_default_dtype, ones_like
from tensorweaver.selection import current_backend
from tensorweaver.tensor import Tensor


class DifferentiableGraph:
    """A forward graph and its backward graphs, replayed as one autograd Function."""

    def __init__(
        self,
        forward: Graph,
        backwards: list[Graph],
        inputs: list[Callable],
        store: Callable | None = None,
        eager: Rerun | None = None,
        saved: tuple[Callable, ...] = (),
        kept: tuple[int, ...] = (),
        rereads: tuple[tuple[int, int, int, Optional[int], Any], ...] = (),
    ) -> None:
        self.forward = forward
        # One per output of the Function: the result's, then each stored attribute's.
        self.backwards = backwards
        self.backward = backwards[0]
        self.inputs = inputs  # getters of the tensors the backward gives gradients for
        # Rebinds the module attributes the step rebinds (pruning's weight) to the
        # Function's outputs after the result: ``store(args, kwargs, outputs)``.
        self.store = store
        # The step's function, run again for a backward that builds a graph; None when
        # running it again would repeat a side effect (a draw, a write, a rebinding).
        self.eager = eager
        # Getters of the tensors the eager forward's nodes would check on backward
        # (saved.py): a replay keeps their versions, so a change in place before backward
        # raises (the create_graph run again checks every tensor the forward read).
        self.saved = saved
        # The Function's outputs that the eager graph saved (saved.py ``saved_outputs``):
        # saved in its ctx, so a change in place before backward raises as eagerly; and
        # (j, b, k, e, how): backward b's input k (its item e, of a tuple a fused kernel
        # saved) is kept output j's array, read as it is at backward (a ``.data`` write into
        # the output reaches the rule, as eagerly), or, with ``how`` (:func:`_kept_arrays`),
        # the array it is a view of, with its values written in.
        self.kept = kept
        self.rereads = rereads
        # A kept result that the recorded backward does not read as such (a view of the
        # array it reads: ``exp(x)[1:]``): a ``.data`` write into it reaches the backward
        # through the forward run again, which can repeat that write (else ``how`` above).
        self.rerun_if_written = eager is not None and bool(kept) and not rereads
        self.source = forward.source + "".join(b.source for b in backwards)

    def ready(self) -> bool:
        return self.forward.ready()

    def compile(self, mode: Optional[str]) -> None:
        self.forward.compile(mode)
        for backward in self.backwards:
            backward.compile(mode)

    def same_as(self, other: Any) -> bool:
        return (
            isinstance(other, DifferentiableGraph)
            and self.forward.same_as(other.forward)
            and len(self.backwards) == len(other.backwards)
            and all(a.same_as(b) for a, b in zip(self.backwards, other.backwards))
        )

    def run(self, args: tuple, kwargs: dict) -> Tensor:
        inputs = [get(args, kwargs) for get in self.inputs]
        if self.store is None:
            return _Replayed.apply(self, args, kwargs, *inputs)
        outputs = _Replayed.apply(self, args, kwargs, *inputs)
        self.store(args, kwargs, outputs)
        return outputs[0]


class _Replayed(Function):
    @staticmethod
    def forward(
        ctx: FunctionCtx, graph: DifferentiableGraph, args: tuple, kwargs: dict, *inputs: Tensor
    ):
        out, saved = graph.forward.run(args, kwargs)
        ctx.graph, ctx.values = graph, saved
        if graph.kept:  # (under saved_tensors_hooks: packed, no version check, as torch's)
            ctx.save_for_backward(*([out] if graph.store is None else [out[i] for i in graph.kept]))
        if graph.saved:
            checked = [get(args, kwargs) for get in graph.saved]
            ctx.checked = checked, [t._version for t in checked]
        ctx.call = (args, kwargs, inputs)
        if graph.eager is not None:
            ctx.seen = graph.eager.seen(args, kwargs, out)
        if graph.store is not None:
            ctx.set_materialize_grads(False)  # (one output's gradient at a time)
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Tensor) -> tuple:
        # (raises as eager's second backward once they are freed, and as eager's node where
        # an output it saved changed in place)
        kept = ctx.saved_tensors
        if ctx.graph.saved:
            check_versions(*ctx.checked)
        if not is_grad_enabled():
            if ctx.graph.rerun_if_written and kept and kept[0].native is not ctx.seen[2].native:
                found = _eager_backward(ctx, grads[0], kept)
                return (None, None, None, *(f if f is None else f.detach() for f in found))
            return _Replayed.recorded(ctx, grads, kept)
        # create_graph=True: the recorded backward has no graph of its own.
        if ctx.graph.eager is not None:
            return (None, None, None, *_eager_backward(ctx, grads[0], kept))
        with no_grad():
            found = _Replayed.recorded(ctx, grads, kept)
        linked = [t for t in (*grads, *ctx.call[2]) if isinstance(t, Tensor) and t.requires_grad]
        if not linked:
            return found
        return tuple(
            DelayedError.apply(f, _NOT_TWICE, *linked) if isinstance(f, Tensor) else f
            for f in found
        )

    @staticmethod
    def recorded(ctx: FunctionCtx, grads: tuple, kept: tuple) -> tuple:
        """The Function's input gradients from the recorded backward graphs (``kept``: the
        outputs the ctx saved, as it gives them back)."""
        graph = ctx.graph
        values = _reread(graph, ctx.values, kept) if kept and graph.rereads else ctx.values
        if graph.store is None:
            found = graph.backward.run((values, grads[0].native), {})
            return (None, None, None, *found)
        total: list[Any] = [None] * len(graph.inputs)
        for k, grad in enumerate(grads):
            if grad is None:
                continue
            found = graph.backwards[k].run((values[k], grad.native), {})
            total = [f if t is None else t if f is None else t + f for t, f in zip(total, found)]
        return (None, None, None, *total)


def _reread(graph: DifferentiableGraph, values: tuple, kept: tuple) -> tuple:
    """The recorded backwards' inputs (``values``) with the kept outputs' arrays as they
    are now."""
    each = [list(v) for v in ((values,) if graph.store is None else values)]
    for j, b, k, e, how in graph.rereads:
        item = each[b][k]
        old = item if e is None else item[e]
        new = kept[j].native if how is None else _written_into(old, kept[j], how)
        each[b][k] = new if e is None else (*item[:e], new, *item[e + 1 :])
    found = tuple(map(tuple, each))
    return found[0] if graph.store is None else found


def _eager_backward(ctx: FunctionCtx, grad: Tensor, kept: tuple) -> tuple:
    """The input gradients of a replayed forward, from the step's function run again
    eagerly on its inputs and differentiated with a graph (``create_graph=True``); ``kept``:
    the result, where the ctx saved it."""
    args, kwargs, inputs = ctx.call
    rerun: Rerun = ctx.graph.eager
    rerun.check_unchanged(ctx.seen, args, kwargs)
    with enable_grad(), autocast_state_restored(ctx.seen[3]):
        out = rerun.run(args, kwargs)
        rerun.check_same_result(ctx.seen, out)
        if kept and kept[0].native is not ctx.seen[2].native:
            # The replay's result was written through ``.data`` since: the same write into
            # the run again's result reaches its node's rule, as the eager one's.
            out.data.copy_(kept[0].detach())
        return autograd_grad(out, inputs, grad, create_graph=True, allow_unused=True)


class Rerun:
    """The step's function, run again for a ``create_graph=True`` backward, and what a
    replay saw that the run again must see too: the tensors the forward reads (by getter),
    the modules it reaches with their training flags, and what its signature holds of the
    objects the function names and of the settings (a replay runs under its trace's)."""

    def __init__(self, fn: Callable, reads: list[Callable], state: StepState) -> None:
        self.fn = fn
        self.reads = reads
        self.modules = [m for root in state.modules for m in root.modules()]
        self.flags = [m.training for m in self.modules]
        self.settings = _settings(state)
        self.grown = state.grown

    def run(self, args: tuple, kwargs: dict) -> Any:
        """``fn(*args, **kwargs)`` with the modules in the mode the replay ran them (a model
        switched to eval after its forward: the gradient is the train-mode forward's, as
        eagerly, and a BatchNorm does not update its statistics in the meantime)."""
        now = [m.training for m in self.modules]
        try:
            for m, flag in zip(self.modules, self.flags):
                m.training = flag
            return self.fn(*args, **kwargs)
        finally:
            for m, flag in zip(self.modules, now):
                m.training = flag

    def seen(self, args: tuple, kwargs: dict, out: Tensor) -> tuple:
        """What a replay saw: the tensors it read with their versions, its result, and the
        autocast state (a gradient penalty under AMP differentiates outside the block)."""
        tensors = [get(args, kwargs) for get in self.reads]
        return tensors, [t._version for t in tensors], out, autocast_state()

    def check_unchanged(self, seen: tuple, args: tuple, kwargs: dict) -> None:
        tensors, versions = seen[:2]
        now = [get(args, kwargs) for get in self.reads]
        if any(a is not b for a, b in zip(now, tensors)):
            # (a tensor attribute replaced by an equal copy: the run again would
            # differentiate towards the new one and give the one the forward read none)
            raise RuntimeError(
                "tw.compile: a module attribute a compiled forward read was rebound to another "
                "tensor before its backward with create_graph=True, so the forward cannot be "
                "run again to differentiate it twice; call the function uncompiled"
            )
        check_versions(tensors, versions)
        if _settings(StepState(self.fn, args, kwargs, grown=self.grown)) != self.settings:
            # Running it now would differentiate another forward.
            raise RuntimeError(
                "tw.compile: the default dtype, the backend, the modules, tensors or "
                "numbers the function names or reads (a config dict's, a module's "
                "parameters) changed between a compiled forward and its backward with "
                "create_graph=True, so the forward cannot be run again to differentiate it "
                "twice; restore them before the backward or call the function uncompiled"
            )

    @staticmethod
    def check_same_result(seen: tuple, out: Any) -> None:
        # (the forward's own result: the caller's is another tensor, which a write into it
        # leaves alone)
        if _close(out, seen[2]):
            return
        raise RuntimeError(
            "tw.compile: the forward run again for a backward with create_graph=True gave "
            "another result than the replay (a Python value it reads changed since), so its "
            "gradient would belong to another forward; call the function uncompiled for "
            "double backward"
        )


def check_versions(tensors: list[Tensor], versions: list[int]) -> None:
    """Raise as eagerly where a tensor a replayed forward read changed in place since (a
    view's version counts its base's writes too): its backward needs the old values."""
    for t, v in zip(tensors, versions):
        if t._version != v:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: a tensor of shape {list(t.shape)} that a tw.compile-d "
                f"forward read is at version {t._version}, expected version {v} (changed "
                "between the call and this backward); use an out-of-place op or .clone() it"
            )


def _settings(state: StepState) -> tuple:
    """The settings, and the objects the function reaches by identity (a parameter replaced
    since by an equal copy would take the run again's gradient from the one the forward
    read) with the Python numbers it and its modules hold, and the values it reads further
    on (:class:`.state.ValuesRead`: a number in a config dict changed since)."""
    tree = tuple(
        (
            id(m),
            module_numbers(m),  # (a module's float the forward baked in: a LeakyReLU's slope)
            *map(id, m._parameters.values()),
            *map(id, m._buffers.values()),
        )
        for root in state.modules
        for m in root.modules()
    )
    return (
        (get_default_dtype(), id(current_backend())),
        tree,
        tuple(map(id, state.tensors)),
        tuple(number_sig(n) for n in state.numbers),
        tuple(map(read_sig, state.reads)),
    )


def _close(out: Any, replayed: Tensor) -> bool:
    """Whether the result of the run again is the replay's, up to the rounding a backend's
    compiled graph may differ by (half the significant digits of the largest finite
    value); NaNs and infinities where the replay has them."""
    if not isinstance(out, Tensor) or out.shape != replayed.shape or out.dtype != replayed.dtype:
        return False
    with no_grad():
        a, b = out.detach(), replayed.detach()
        if not b.numel():
            return True
        scale = float(b.abs().where(b.isfinite(), 0).max())
        tol = finfo(b.dtype).eps ** 0.5 * scale
        return bool(a.isclose(b, rtol=0, atol=tol, equal_nan=True).all())


#: What a second backward through the gradient of a replayed forward that cannot be run
#: again raises, as ``torch.compile``'s double backward does.
_NOT_TWICE = (
    "tw.compile: a replayed forward that draws random numbers, writes into a tensor "
    "or rebinds an attribute cannot be differentiated twice (its gradient was taken "
    "with create_graph=True); call the function uncompiled for double backward"
)


def _record_backward(
    builder: GraphBuilder, output: Tensor, inputs: list[Tensor], backends: list, fullgraph: bool
) -> tuple[GraphBuilder, list]:
    """Record the backward of ``output`` towards ``inputs`` (with a placeholder output
    gradient): its builder, holding the calls, and the gradients found."""
    placeholder = ones_like(output)
    recorder = Recorder(backends, fullgraph)
    try:
        recorder.open()
        grads = autograd_grad(
            output, inputs, grad_outputs=placeholder, retain_graph=True, allow_unused=True
        )
    except HostRead:
        raise  # fullgraph=True: a read breaks the graph, as it says
    except RuntimeError as exc:
        # Eagerly, a later backward through the result would raise this too (a parameter
        # the step changed in place after its own autograd.grad): the step runs eagerly.
        raise Unsupported(f"a backward through its result raises ({exc})") from exc
    finally:
        recorder.close()
    if recorder.host_read is not None or recorder.reads.lines:
        line = recorder.host_read or recorder.reads.lines[0]
        raise Unsupported(f"its backward reads tensor values at {line}")
    back = GraphBuilder([], (), {})
    back.outer = builder
    back.regions = recorder.regions
    back.sources[id(placeholder.native)] = "args[1]"
    back.find_holders(recorder.calls)
    for call in recorder.calls:
        back.call(*call)
    return back, list(grads)


def _hooked(outputs: list[Tensor], inputs: list[Tensor]) -> bool:
    """Whether a node of the outputs' autograd graphs down to ``inputs`` (the tensors the
    backward gives gradients for) has a gradient hook: one the forward registered on a
    tensor it computed, or one on an input that is no leaf."""
    if not GRAD_HOOKS:
        return False  # (the usual case: no walk)
    todo = [t._node for t in outputs if t._node is not None]
    seen = {id(t._node) for t in inputs if t._node is not None}
    if any(key in GRAD_HOOKS for key in seen):
        return True
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        if id(node) in GRAD_HOOKS:
            return True
        seen.add(id(node))
        todo += [p for p in node.parents or () if type(p) is Node]
    return False


def _reads(builder: GraphBuilder, recorder: Recorder) -> list[Callable]:
    """Getters of the tensors at the step's locations whose arrays its forward's calls take
    (not their gradients, which a backward may accumulate into meanwhile)."""
    taken = {id(leaf) for call in recorder.calls for leaf in leaves((call[2], call[3]))}
    return [
        getter
        for expr, getter, value, native, _ in builder.watched
        if isinstance(value, Tensor) and id(native) in taken and not expr.endswith("._grad")
    ]


def _kept_arrays(out: Tensor, through_views: bool) -> list[tuple[Any, Any]]:
    """The arrays a recorded backward may read for the kept output ``out``, each with how
    to make it from ``out`` as it is at backward: ``out``'s own (None), and with
    ``through_views``, its base's where ``out`` is a view of a tensor the step does not
    return (``exp(x)[1:]``): ``(write, dtype)``, the view's write-back into that base."""
    found: list[tuple[Any, Any]] = [(out.native, None)]
    view = out._view_of
    if through_views and view is not None and view[0]._view_of is None:
        found.append((view[0].native, (view[1], view[0].dtype)))
    return found


def _written_into(array: Any, view: Tensor, how: tuple) -> Any:
    """``array``, the base of kept output ``view`` as the forward made it, with ``view``'s
    values as they are now written in (a ``.data`` write into the view since): what the
    eager node, which saved the base, reads."""
    write, dtype = how
    base = Tensor(array, view.backend, dtype)
    with no_grad():
        write(base, view.detach())
    return base.native


def _places(value: Any, array: Any) -> list[Optional[int]]:
    """Where a backward's input ``value`` is ``array``: [None] if it is, the positions of
    ``array`` in it where it is a tuple (a fused kernel's saved values), else []."""
    if value is array:
        return [None]
    if type(value) is tuple:
        return [e for e, item in enumerate(value) if item is array]
    return []


def differentiable_graph(
    builder: GraphBuilder,
    result: Any,
    tail: list[str],
    recorder: Recorder,
    fullgraph: bool,
    fn: Callable,
    state: StepState,
) -> DifferentiableGraph:
    """Record the backward of ``result`` and build both graphs (``builder`` holds the
    forward's calls, ``recorder`` recorded them; ``tail`` its write-backs). Module attributes
    the step rebinds to tensors of its graph (``builder.stored``) are further outputs, each
    with its backward. ``fn`` is the step's function, run again for ``create_graph=True``
    when that repeats no side effect; ``state`` holds the roots of the call traced."""
    backends = recorder.backends
    if not isinstance(result, Tensor):
        raise Unsupported(
            "it returned several values that require grad and ran no backward: only a "
            "single tensor result of a compiled forward can be differentiated yet"
        )
    inputs: dict[int, tuple[Callable, Tensor]] = {}
    for _, getter, value, _, _ in builder.watched:
        if isinstance(value, Tensor) and value.requires_grad:
            inputs.setdefault(id(value), (getter, value))
    tensors = [t for _, t in inputs.values()]
    # The Function's outputs: the result, then each stored tensor not already among them
    # (a forward that keeps its result in an attribute leaves one object, as eagerly).
    place = {id(result): 0}
    outputs = [result]
    for _, t in builder.stored:
        if t._node is not None and id(t) not in place:
            place[id(t)] = len(outputs)
            outputs.append(t)
    for t in outputs if builder.stored else ():
        # The Function's outputs are separate tensors: a view among them (``self.row =
        # out[0]``) would no longer see a write into its base, as it does eagerly.
        if t._view_of is not None and builder._reachable(t._view_of[0]):
            raise Unsupported(
                "it returns (or stores) a view of a tensor it returns or leaves at a location, "
                "and a replay does not rebuild a write through it"
            )
    for expr, t in builder.stored:
        if t._node is None and id(t._alias_of) not in place:
            raise Unsupported(
                f"it keeps at {expr} a detach() of a tensor of its graph that it neither "
                "returns nor keeps, and a replay does not rebuild that alias"
            )
    if _hooked(outputs, tensors):
        raise Unsupported(
            "its forward registers a gradient hook on a tensor it computes (register_hook), "
            "which recording the backward while tracing would run a second time, and a replay "
            "not at all"
        )
    recorded = [_record_backward(builder, out, tensors, backends, fullgraph) for out in outputs]
    getters = [g for g, _ in inputs.values()]
    if builder.stored:
        # An input no output's backward reaches is left out: the stored attribute of the
        # last call (a tensor of that call's graph) would chain every replay's to the next.
        used = [i for i in range(len(tensors)) if any(g[i] is not None for _, g in recorded)]
        recorded = [(back, [grads[i] for i in used]) for back, grads in recorded]
        getters = [getters[i] for i in used]
    backwards = [back.build([], back.result(grads)) for back, grads in recorded]
    watched: dict[int, Callable] = {}
    for expr, getter, value, _, _ in builder.watched:
        if isinstance(value, Tensor) and not expr.endswith("._grad"):
            watched.setdefault(id(value), getter)
    checked = tuple(saved_inputs(outputs, watched))
    kept = tuple(saved_outputs(outputs))
    draws = any(is_random(call[1], call[2]) for call in recorder.calls)
    eager = None
    if not (builder.stored or draws or tail):
        eager = Rerun(fn, _reads(builder, recorder), state)
    rereads = tuple(
        (j, b, k, e, how)
        for j, i in enumerate(kept)
        for array, how in _kept_arrays(outputs[i], eager is None)
        for b, (back, _) in enumerate(recorded)
        for k, value in enumerate(back.saved)
        for e in _places(value, array)
    )
    saved = [tuple_source([builder.value(v) for v in back.saved]) for back, _ in recorded]
    if not builder.stored:
        forward = builder.build(tail, tuple_source([builder.result(result), saved[0]]))
        return DifferentiableGraph(
            forward, backwards, getters, eager=eager, saved=checked, kept=kept, rereads=rereads
        )
    outs = tuple_source([builder.result(out) for out in outputs])
    forward = builder.build(tail, tuple_source([outs, tuple_source(saved)]))
    lines = [
        f"{expr} = outputs[{place[id(t)]}]"
        if t._node is not None
        else f"{expr} = _alias(o := outputs[{place[id(t._alias_of)]}], o.native, False)"
        for expr, t in builder.stored
    ]
    source = "def _store(args, kwargs, outputs):\n" + "".join(f"    {s}\n" for s in lines)
    exec(compile(source, "<tw.compile store>", "exec"), builder.globals)  # noqa: S102
    forward.source += source
    store = builder.globals["_store"]
    return DifferentiableGraph(
        forward, backwards, getters, store, saved=checked, kept=kept, rereads=rereads
    )
