"""``tw.compile``: capture a step once, replay it while its guards hold."""

from __future__ import annotations

import functools
import operator
import warnings
from collections import OrderedDict
from collections.abc import Sized
from typing import Any, Callable, Optional

from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS
from tensorweaver.compiler import reads, symbolic
from tensorweaver.compiler.branches import Branches, NewPath
from tensorweaver.compiler.differentiable import DifferentiableGraph, differentiable_graph
from tensorweaver.compiler.draws import DRAWS
from tensorweaver.compiler.graph import Graph, GraphBuilder, StaleGraph, Unsupported
from tensorweaver.compiler.guards import make_guard
from tensorweaver.compiler.recorder import Recorder
from tensorweaver.compiler.released import shape_of
from tensorweaver.compiler.state import (
    StepState,
    buffers_of,
    describe_change,
    note_rebound_buffers,
    scheduler_attributes,
    schedulers_reached,
    schedulers_stepped,
    uninitialized,
)
from tensorweaver.nn.modules import module as modules
from tensorweaver.nn.modules.module import Module
from tensorweaver.optim.optimizer import TRACED
from tensorweaver.selection import current_backend
from tensorweaver.tensor import Tensor

#: Graphs kept per compiled function (one per signature), least recently used dropped first.
CACHE_SIZE = 8
#: Traces in a row whose step changed its own signature before the function stays eager.
_UNSTABLE_LIMIT = 3
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_EAGER = "eager"  # a cache entry: this signature runs eagerly
_tracing: list[Recorder] = []


#: The attribute that marks a function ``tw.compile`` must run eagerly (``compiler.disable``).
DISABLED = "_tw_compiler_disabled"


class CompileWarning(UserWarning):
    """A compiled function runs eagerly, or retraces more than it should."""


class CompiledFunction:
    """A function whose calls replay a recorded graph (see :func:`compile`); a compiled
    module's (:class:`OptimizedModule`) ``forward`` is one of the module's call."""

    def __init__(
        self, fn: Callable, fullgraph: bool, backend: Optional[str], mode: Optional[str] = None
    ) -> None:
        self._fn = fn
        self._fullgraph = fullgraph
        self._backend = backend  # (to compile a copy alike: OptimizedModule.__reduce__)
        self._eager_only = backend == "eager"
        self._hook = backend != "tensorweaver"  # let the backend compile the graph
        self._mode = mode
        self._cache: OrderedDict[tuple, Any] = OrderedDict()
        self._unstable = 0
        self._pending: dict[tuple, Any] = {}  # graphs traced once, to be confirmed
        self._stale: dict[tuple, int] = {}  # replays in a row stopped by StaleGraph
        self._paths: dict[tuple, int] = {}  # traces in a row on a path not traced before
        self._new = 0  # traces in a row under signatures not awaiting a second trace
        self._changing: dict[tuple, None] = {}  # signatures whose trace changed them
        self._state: StepState | None = None  # the last call's, to reuse its roots
        self._grown: dict[int, tuple] = {}  # (StepState.grown)
        # Signature -> the function checking it (guards.make_guard), and (guard, signature,
        # entry) of the last replay, whose guard the next call checks first.
        self._guards: dict[tuple, Any] = {}
        self._fast: tuple | None = None
        self.traces = 0  # how many times a call was traced (for tests and tuning)
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._eager_only or _tracing:  # inside another trace: its recorder sees our ops
            return self._fn(*args, **kwargs)
        fast = self._fast
        if fast is not None and fast[0](args, kwargs):
            # The last replayed signature again, checked by its own guard function.
            _, key, entry = fast
            state, guard = None, None
        else:
            self._fast = None
            state = self._state = StepState(self._fn, args, kwargs, self._state, self._grown)
            key = state.signature(args, kwargs)
            entry = self._cache.get(key)
            if entry is _EAGER:
                return self._fn(*args, **kwargs)
        if entry is not None and entry.ready():
            if state is not None:
                self._cache.move_to_end(key)
                guard = self._guard(state, args, kwargs, key)
            try:
                result = entry.run(args, kwargs)
            except NewPath:
                pass  # a value read into Python took a branch no graph has: trace it
            except StaleGraph:
                # A value the graph assumed changed (one the core read back to check an
                # argument, or a comparison of a recomputed number): trace again.
                self._stale[key] = stale = self._stale.get(key, 0) + 1
                if stale >= _UNSTABLE_LIMIT:
                    self._store(key, _EAGER)
                    self._warn(
                        "values the graph assumed (index bounds or class targets the core "
                        "checks, comparisons of the learning rate or step count) change from "
                        "call to call, so it runs eagerly for these inputs"
                    )
                    return self._fn(*args, **kwargs)
            else:
                self._new = 0
                if self._stale:
                    self._stale.pop(key, None)
                if guard is not None:
                    self._fast = (guard, key, entry)
                return result
        if state is None:
            state = self._state = StepState(self._fn, args, kwargs, self._state, self._grown)
        return self._trace(state, key, args, kwargs)

    def __get__(self, owner: Any, owner_type: Any = None) -> Any:
        # ``@tw.compile`` on a method: bound to an instance, which becomes the first argument
        return self if owner is None else functools.partial(self, owner)

    def __getattr__(self, name: str) -> Any:
        # A compiled module still answers .parameters(), .train(), .state_dict(), ...
        if name == "_fn":
            raise AttributeError(name)
        return getattr(self._fn, name)

    def graph_source(self) -> list[str]:
        """The Python source of each cached graph (for reading what a replay does)."""
        graphs = []
        for entry in self._cache.values():
            if isinstance(entry, Branches):
                graphs.extend(entry.graphs.values())
            elif entry is not _EAGER:
                graphs.append(entry)
        return [g.source for g in graphs]

    def _trace(self, state: StepState, key: tuple, args: tuple, kwargs: dict) -> Any:
        if uninitialized(state.modules):
            # A lazy module's first forward gives its parameters their shapes (and values):
            # run it eagerly, as PyTorch does, and trace the next call.
            return self._fn(*args, **kwargs)
        if not state.complete:
            self._store(key, _EAGER)
            self._warn(
                "it may read more Python values through containers, objects and helpers than "
                "a guard checks (more than 256, or entries of a holder with more than 64 that "
                "its code reads without naming them: .items(), getattr, **cfg), and a replay "
                "would bake them in, so it runs eagerly for these inputs; pass what changes "
                "as arguments"
            )
            return self._fn(*args, **kwargs)
        self.traces += 1
        loose = state.signature(args, kwargs, argument_grads=False)  # (before lift)
        builder = GraphBuilder(state.locations(args, kwargs), args, kwargs)
        backends = {id(b): b for b in _backends(builder)}
        recorder = Recorder(list(backends.values()), self._fullgraph)
        lifted = symbolic.lift(state.optimizers, builder.bind, builder.guards)
        TRACED.quiet = recorder.unrecorded  # (until lower: the replay makes those arrays)
        schedulers = schedulers_reached(self._fn, args, kwargs)
        counters = scheduler_attributes(schedulers)
        buffers = buffers_of(state.modules)
        _tracing.append(recorder)
        unpacked = _watch_unpacks()
        try:
            recorder.open()
            result = self._fn(*args, **kwargs)
        except BaseException:
            recorder.reads.closed = builder.guards.closed = True
            raise
        finally:
            recorder.close()
            _tracing.pop()
            _restore_hooks(unpacked)
            DRAWS.clear()
            numbers = symbolic.lower(lifted, builder.bind, builder.settle, builder.written)
        try:
            # A buffer the step rebinds is read and rebound where its module holds it from
            # the next trace on (state.REBOUND_BUFFERS): the signature changes once.
            note_rebound_buffers(buffers)
            if recorder.host_read is not None:
                self._store(key, _EAGER)
                self._warn(
                    f"the step reads tensor values into Python at {recorder.host_read} (print, "
                    ".numpy(), ...), so it runs eagerly for these inputs; move that read out of "
                    "the compiled function to replay it"
                )
                return reads.plain(result)
            if unpacked[1]:
                self._store(key, _EAGER)
                self._warn(
                    "saved_tensors_hooks entered around the call pack the tensors its "
                    "forward saves (or unpack them for its backward), and a replay would not "
                    "call those hooks, so it runs eagerly for these inputs"
                )
                return reads.plain(result)
            if schedulers_stepped(schedulers, counters):
                self._store(key, _EAGER)
                self._warn(
                    "the step calls a learning-rate scheduler's step(), whose Python counters "
                    "(last_epoch, ...) a replay would not advance, so it runs eagerly for these "
                    "inputs; call scheduler.step() after the compiled function to replay it"
                )
                return reads.plain(result)
            state.note_grown()
            now = StepState(self._fn, args, kwargs, grown=self._grown)
            # (A gradient the step gives an argument is replayed, and the next call's
            # fresh argument, requiring grad, has none again: the graph serves it.)
            after = now.signature(args, kwargs)
            changed = after != key and now.signature(args, kwargs, argument_grads=False) != loose
            if changed and key not in self._changing:
                # The step changed what it was specialised on (first step: gradients and
                # optimizer state appear); the next call traces again from the new state.
                # A signature that comes back (the caller detaches the hidden state the
                # forward keeps; a no_grad call leaves a pruned weight without a graph) is
                # compiled when it comes again, as one that does not change.
                self._changing[key] = None
                if len(self._changing) > CACHE_SIZE:
                    del self._changing[next(iter(self._changing))]
                self._unstable += 1
                if self._unstable >= _UNSTABLE_LIMIT:
                    self._eager_only = True
                    self._warn(
                        f"each call changes {describe_change(key, after)}, which the graph would "
                        "bake in, so the function runs eagerly from now on"
                    )
                return reads.plain(result)
            # (After the signature: a step that creates state, such as an optimizer's
            # first, may read what it created; the next trace reads it from the state.)
            lost = _lost_reads(recorder.reads, result)
            if lost:
                self._store(key, _EAGER)
                self._warn(
                    f"the step reads tensor values into Python at {recorder.reads.line(lost)} "
                    "(.item(), .tolist(), bool(tensor)) and uses them in a way a replay cannot "
                    "repeat (arithmetic that reaches a tensor, float(), int(), a Python side "
                    "effect such as logging), so it runs eagerly for these inputs; only return "
                    "such a value or branch on it, or move the read out of the compiled function"
                )
                return reads.plain(result)
            self._unstable = 0
            try:
                graph = self._graph(builder, recorder, result, numbers, lifted, args, kwargs, state)
            except Unsupported as exc:
                self._store(key, _EAGER)
                self._warn(f"{exc}, so it runs eagerly for these inputs")
                return reads.plain(result)
            result = reads.plain(result)
            # A graph is trusted once the next trace under the same signature gives the same
            # graph: a Python value the guards do not cover (a number computed from the
            # optimizer's state by other means than arithmetic, a counter on some object,
            # host-side randomness copied in with from_host) would show as a changed constant.
            outcomes = getattr(graph, "forward", graph).path  # of its branches on read values
            previous = self._pending.pop((key, outcomes), None)
            if previous is None:
                # A value the caller changes on each call (a counter the step reads) makes
                # a new signature each time: after CACHE_SIZE in a row, run eagerly.
                self._new += 1
                if self._new > CACHE_SIZE:
                    self._eager_only = True
                    self._warn(
                        f"{self._new} calls in a row traced under signatures not seen before (a "
                        "Python value it reads, such as a number on a config object, changes on "
                        "each call), so the function runs eagerly from now on"
                    )
                    return result
                self._pending[key, outcomes] = graph
                if len(self._pending) > CACHE_SIZE:
                    del self._pending[next(iter(self._pending))]
                self._paths[key] = fresh = self._paths.get(key, 0) + 1
                if fresh >= CACHE_SIZE:
                    self._store(key, _EAGER)
                    self._warn(
                        f"values it reads into Python took {fresh} new paths through its branches "
                        "in a row (an integer read or a comparison whose outcome keeps changing), "
                        "so it runs eagerly for these inputs"
                    )
                return result
            self._paths.pop(key, None)
            self._new = 0
            if not previous.same_as(graph):
                self._store(key, _EAGER)
                self._warn(
                    "two traces gave different graphs: a Python value that changes from call to "
                    "call reaches the backend as a constant (a number computed from the "
                    "optimizer state in a way the replay cannot recompute, an attribute of some "
                    "object, host-side randomness such as randperm), or values the core checks "
                    "(index bounds, class targets) changed, so it runs eagerly for these inputs"
                )
                return result
            if self._hook:
                graph.compile(self._mode)
            if not outcomes:  # no branches on read values: the graph alone
                self._store(key, graph)
                return result
            branches = self._cache.get(key)
            branches = branches if isinstance(branches, Branches) else Branches()
            branches.add(graph)
            if len(branches) > CACHE_SIZE:
                self._store(key, _EAGER)
                self._warn(
                    f"values it reads into Python take more than {CACHE_SIZE} paths through its "
                    "branches, so it runs eagerly for these inputs"
                )
                return result
            self._store(key, branches)
            return result
        finally:
            # Numbers read or lifted in this trace that some Python object kept are plain
            # from now on.
            recorder.reads.closed = builder.guards.closed = True

    def _graph(
        self,
        builder: GraphBuilder,
        recorder: Recorder,
        result: Any,
        numbers: list[str],
        lifted: list[tuple],
        args: tuple,
        kwargs: dict,
        state: StepState,
    ) -> Graph | DifferentiableGraph:
        builder.reads = recorder.reads
        builder.regions = recorder.regions
        builder.find_holders(recorder.calls)
        guards = list(recorder.reads.guards)  # each after the calls recorded before it
        for i, call in enumerate(recorder.calls):
            while guards and guards[0][0] <= i:
                builder.guard(*guards.pop(0)[1:])
            builder.call(*call)
        for _, expr, outcome in guards:
            builder.guard(expr, outcome)
        used = "\n".join([*builder.recomputed(), *(expr for expr, _ in builder.guards)])
        builder.guards += [(expr, True) for expr in symbolic.unused(lifted, builder.bind, used)]
        builder.returns(result)
        tail = builder.write_backs(args, kwargs) + numbers
        if _needs_grad(result) and not any("._grad" in line for line in tail):
            # A forward whose result autograd will differentiate later.
            return differentiable_graph(
                builder, result, tail, recorder, self._fullgraph, self._fn, state
            )
        if builder.stored:
            raise Unsupported(
                f"it rebinds {builder.stored[0][0]} to a tensor whose autograd graph is still "
                "whole after the step, and only a compiled forward that returns one tensor "
                "requiring grad (and runs no backward) replays that"
            )
        return builder.build(tail, builder.result(result, graphs=True))

    def _guard(
        self, state: StepState, args: tuple, kwargs: dict, key: tuple
    ) -> Callable[..., bool] | None:
        """The guard function of ``key`` (made once per signature), if this call passes it."""
        guard = self._guards.get(key)
        if guard is None or not guard(args, kwargs):
            guard = self._guards[key] = make_guard(state, self._fn, args, key)
        # A guard that refuses the call it was made from would be wrong: never use it.
        return guard if guard is not None and guard(args, kwargs) else None

    def _store(self, key: tuple, entry: Any) -> None:
        self._fast = None
        self._cache[key] = entry
        if len(self._cache) > CACHE_SIZE:
            self._guards.pop(self._cache.popitem(last=False)[0], None)
            self._warn(
                f"more than {CACHE_SIZE} different signatures (shapes, dtypes, Python number "
                "arguments, training flags, ...): the oldest graph was dropped and will be "
                "traced again if needed; pass values that change as tensors"
            )

    def _warn(self, what: str) -> None:
        name = getattr(self._fn, "__qualname__", type(self._fn).__name__)
        warnings.warn(f"tw.compile({name}): {what}", CompileWarning, stacklevel=4)


class OptimizedModule(Module):
    """What ``tw.compile(module)`` returns, as PyTorch's ``OptimizedModule``: a module whose
    only child is the compiled module, ``_orig_mod``, and whose ``forward`` is the compiled
    call of it (a :class:`CompiledFunction`, the module's own hooks inside).

    Attributes the wrapper does not define itself (the class's, :attr:`_own`) are read from,
    written to and deleted on ``_orig_mod``; ``training`` is the module's. Module methods
    (``eval()``, ``double()``, ``to()``, ...) act on ``_orig_mod`` through the wrapper and
    return the wrapper; ``parameters()``/``state_dict()`` name entries under
    ``_orig_mod.`` as PyTorch does. ``copy.copy``, ``copy.deepcopy``, pickling and
    ``tw.save``/``tw.load`` give a new compiled module (of the same module, of a copy of it)
    with empty caches.

    A call runs ``forward`` itself until the wrapper gets hooks of its own (or ``forward``
    or ``Module.compile`` is set on it), and ``Module.__call__`` from then on: the global
    module hooks (``register_module_forward_hook``, ...) run for the modules inside the
    compiled call, and for the wrapper too (an extra time, with PyTorch's warning) only once
    it calls through ``Module.__call__``."""

    #: Names set on the wrapper itself (PyTorch's ``_opt_mod_attributes``, those tw has, and
    #: ``_call``).
    _own = frozenset({"_orig_mod", "forward", "__dict__", "_compiled_call_impl", "_call"})

    def __init__(
        self,
        mod: Module,
        fullgraph: bool = False,
        backend: Optional[str] = None,
        mode: Optional[str] = None,
    ) -> None:
        super().__init__()  # (its training flag is dropped: the property below is the module's)
        self._orig_mod = mod
        self.forward = CompiledFunction(mod, fullgraph, backend, mode)
        self._call = self.forward

    # Python calls what this property gives: the compiled function itself, with no Python
    # frame in between (Module.__call__'s frame, argument repacking and hook checks cost
    # ~0.4 us a call), until _hooked() makes it Module.__call__.
    __call__ = property(operator.attrgetter("_call"))

    def _hooked(self) -> None:
        """Calls go through ``Module.__call__`` (hooks, a new ``forward``) from now on."""
        self._call = functools.partial(Module.__call__, self)

    def _add_hook(self, table: OrderedDict, hook: Callable, prepend: bool, *options: Any) -> Any:
        self._hooked()
        return Module._add_hook(table, hook, prepend, *options)

    @property  # type: ignore[override]
    def training(self) -> bool:
        return self._modules["_orig_mod"].training

    @training.setter
    def training(self, mode: bool) -> None:
        mod = self.__dict__.get("_modules", {}).get("_orig_mod")
        if mod is not None:  # (None while Module.__init__ sets its default)
            mod.training = mode

    @property
    def traces(self) -> int:
        """How many calls were traced (:class:`CompiledFunction`'s count)."""
        return self.forward.traces

    def graph_source(self) -> list[str]:
        """:meth:`CompiledFunction.graph_source` of the compiled call."""
        return self.forward.graph_source()

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        if (
            modules._global_forward_pre_hooks
            or modules._global_forward_hooks
            or modules._global_backward_pre_hooks
            or modules._global_backward_hooks
        ):
            warnings.warn(
                "tw.compile(module) with global module hooks (register_module_forward_hook, "
                "...): they run for the compiled wrapper too, an extra time; use the module's "
                "own hooks or Module.compile() instead",
                UserWarning,
                stacklevel=3,
            )
        return super()._call_with_hooks(args, kwargs)

    def __len__(self) -> int:
        mod = self._orig_mod
        if isinstance(mod, Sized):
            return len(mod)
        raise TypeError(f"{type(mod).__name__} does not support len()")

    def __reduce__(self) -> tuple:
        compiled = self.forward
        return (
            type(self),
            (self._orig_mod, compiled._fullgraph, compiled._backend, compiled._mode),
        )

    def __getattr__(self, name: str) -> Any:
        mod = self.__dict__.get("_modules", {}).get("_orig_mod")
        if mod is None:  # (before __init__ registered it)
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return mod if name == "_orig_mod" else getattr(mod, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._own:
            super().__setattr__(name, value)
            if name in ("forward", "_compiled_call_impl") and "_call" in self.__dict__:
                self._hooked()
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._own:
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def __dir__(self) -> list[str]:
        names = self._orig_mod.__dir__()
        known = set(names)
        return names + [n for n in super().__dir__() if n not in known]


def _watch_unpacks() -> tuple[list, list]:
    """Put hooks that note their calls in place of each pair of saved_tensors_hooks in
    force (a step whose forward packs through them, or whose backward unpacks: a replay
    would call neither), until :func:`_restore_hooks`: ``(the hooks in force, the calls
    noted)``."""
    before = list(SAVED_TENSORS_HOOKS)
    calls: list = []

    def noting(hook: Callable) -> Callable:
        def noted(value: Any) -> Any:
            calls.append(None)
            return hook(value)

        return noted

    SAVED_TENSORS_HOOKS[:] = [(noting(pack), noting(unpack)) for pack, unpack in before]
    return before, calls


def _restore_hooks(watched: tuple[list, list]) -> None:
    """Put back the hooks :func:`_watch_unpacks` replaced (those the step entered are
    gone: it left their contexts)."""
    before = watched[0]
    SAVED_TENSORS_HOOKS[: len(before)] = before


def _backends(builder: GraphBuilder) -> list[Any]:
    """The backend objects the step may use: its tensors' and the current one."""
    found = [current_backend()]
    for _, _, value, _, _ in builder.watched:
        if isinstance(value, Tensor):
            found.append(value.backend)
    return found


def _lost_reads(log: reads.ReadLog, result: Any) -> set[int]:
    """The reads a replay cannot repeat: used otherwise than returned or branched on."""
    followed = reads.returned(result).union(*(reads.uses(e) for _, e, _ in log.guards))
    return log.escaped | (set(range(len(log.arrays))) - followed)


def _needs_grad(value: Any) -> bool:
    """Whether ``value`` holds a tensor that a later backward can differentiate (one whose
    graph no backward of the step freed)."""
    if isinstance(value, Tensor):
        return value._node is not None and shape_of(value._node) is None
    if type(value) in (tuple, list):
        return any(_needs_grad(v) for v in value)
    if type(value) is dict:
        return any(_needs_grad(v) for v in value.values())
    return False


def compile(  # noqa: A001  (PyTorch's name)
    model: Optional[Callable] = None,
    *,
    fullgraph: bool = False,
    dynamic: Optional[bool] = None,
    backend: Optional[str] = None,
    mode: Optional[str] = None,
    options: Optional[dict] = None,
    disable: bool = False,
) -> Any:
    """Capture ``model`` (a function or module) once as a graph of backend primitives and
    replay it (``torch.compile``'s spelling; also ``@tw.compile`` and ``@tw.compile(...)``).

    The first calls for a given *signature* run eagerly while every primitive they reach
    is recorded — the forward, the backward the tape runs, the optimizer's in-place
    updates — with its inputs (arguments, parameters, buffers, gradients, optimizer state)
    and what it rebinds. Once two consecutive traces give the same graph (so no Python
    value that changes between calls was baked in), later calls check their guards (grad
    mode, default dtype and device; each argument's shape, dtype, device and
    ``requires_grad``, Python numbers among the arguments by value, which arguments share
    an array; each module's submodules and training flags, the identity and metadata of
    its parameters and buffers and their gradients; the optimizer's settings and state) and
    run the recorded primitives directly on the backend: no Tensor, autograd or promotion
    work per op, every value freed after its last use. A tensor the step changes in place
    (a parameter, a buffer, optimizer state) takes its new value as eagerly: a new version,
    written into memory it shares with NumPy (``.numpy()``), seen by its views. A changed
    guard traces again (8 graphs are kept, with a warning when more are needed). The guards
    of the signature replayed last are checked first by a function generated for it
    (:mod:`tensorweaver.compiler.guards`), when the arguments are tensors and Python
    scalars.

    Python floats of the optimizer state (Adam's ``step``) and each group's ``lr``,
    ``momentum`` and ``betas`` are recomputed by the graph rather than guarded
    (:mod:`tensorweaver.compiler.symbolic`), so neither the step count nor a schedule
    (OneCycleLR and CyclicLR also cycle the momentum) retraces; a setting that the step
    uses only in ways the graph cannot recompute (``float()``) is guarded by value. A
    step that calls a learning-rate scheduler's ``step()`` (one it reaches through its
    arguments, its names, their attributes or a helper it calls) runs eagerly, with a warning: a
    replay would not advance the scheduler's Python counters (``last_epoch``, which also
    decides StepLR's decays); call it after the compiled step instead. Values
    the core reads back to check arguments are checked again on replay: index bounds and
    class targets against the range in which the check passes as traced (each batch's least
    and greatest target may differ), other values (ignored targets, ``bincount``'s size) against the
    traced ones; a replay that fails such a check traces again (the checks run before any
    random draw they do not need; a replay stopped after draws puts the backends'
    generators back first, so the trace draws as eagerly; a write into memory shared with
    NumPy before such a check makes the step run eagerly), and the trace raises as eagerly. Random
    primitives are called again on replay, so dropout draws fresh masks from the backend's
    generator, as the eager step does after the same ``tw.manual_seed``. A step that
    changes a guard itself (the first step creates gradients and optimizer state) traces
    again on the next call; one that changes it on every call, or whose two traces differ,
    runs eagerly, with a warning.

    A function that returns one tensor requiring grad and runs no backward itself (a
    module's forward, in training) is recorded with the backward the tape runs for it: the
    replayed result carries an autograd node whose backward replays that graph, so
    ``loss.backward()`` outside fills ``.grad`` of parameters and inputs as eagerly. A
    backward with ``create_graph=True`` through it (a gradient penalty) runs the function
    again eagerly on the same inputs and differentiates that, so the gradient differentiates
    again as eagerly (in the train/eval modes of the forward; a tensor it read changed in
    place since, a rebound parameter or a Python number it reads changed raises, as the
    gradient would be another forward's); where running it again would repeat a side effect
    (a random draw, a write into a buffer, a rebound attribute) the gradient requires grad
    and its backward raises, as ``torch.compile``'s double backward does. A step that runs
    its own backward returns what it returns as eagerly
    (:mod:`tensorweaver.compiler.released`): a tensor of the graph that backward freed (the
    loss, an LSTM's hidden state) requires grad and shows its ``grad_fn``, and a backward
    through it raises PyTorch's "Trying to backward through the graph a second time"; a
    returned tensor that the step leaves in a parameter, gradient, optimizer state or
    argument is that very tensor; a returned tensor carries its ``.grad`` (a new leaf, a
    ``retain_grad()`` one); a returned ``detach()`` of a parameter or of another result
    writes into it, as eagerly; a tensor returned twice is one object. One that returns a
    tensor whose graph is still whole after its backward (``retain_graph=True``), or a view
    of a parameter or of another result, runs eagerly, with a warning.

    Once a graph is confirmed, a backend that defines the optional ``compile_graph`` hook
    (API 2.4; :mod:`tensorweaver.compiler.record`) may compile its calls: torch hands them
    to ``torch.compile`` (inductor; ``mode`` passes through; the first replay compiles,
    which takes seconds, and the first after a changed optimizer number compiles once
    more), NumPy calls its ufuncs directly with its warnings turned off once for the whole
    step and writes results into arrays the step no longer needs (``out=``), bit for bit
    the eager results. Other backends replay the calls one by one.

    A step may read tensor values into Python (``.item()``, ``.tolist()``, ``bool(t)``,
    ``if x > 0``): the replay reads them again where the step did
    (:mod:`tensorweaver.compiler.reads`). A float the step returns (``loss.item()``, or a
    number computed from it) is returned as read afresh; a comparison or truth test of it,
    and an integer or boolean read itself, is a guard that the replay checks right after
    the read: a different outcome runs the graph traced on that path (traced, twice, on
    first need; 8 paths per signature), handed the random draws the stopped replay made.
    A read used otherwise (arithmetic reaching a tensor, ``float()``, ``int()``, a side
    effect such as logging, a read by ``print`` or ``.numpy()``) makes that signature run
    eagerly, with one warning naming the line; ``fullgraph=True`` raises at any read
    instead. A read float passed to ``math`` or NumPy functions escapes unseen (a branch
    on ``math.isnan(loss.item())`` is not guarded): compare the number itself.

    Shapes are always specialised (``dynamic`` is accepted and ignored); ``options`` has
    no effect; ``backend`` None or ``"inductor"`` is the replay, compiled by the backend's
    hook where it has one, ``"tensorweaver"`` the replay alone, and ``"eager"`` (or
    ``disable=True``) runs the function as it is. Compiling a module returns an
    :class:`OptimizedModule`, a module around it whose call is the compiled call of the
    module's ``__call__`` (PyTorch's: attributes read and written through it are the
    module's, ``state_dict`` keys start with ``_orig_mod.``); the module itself is unchanged.

    A module's plain tensor attribute (neither parameter nor buffer) that the step rebinds
    (the ``weight`` a forward pre-hook of pruning or ``weight_norm`` computes, a tensor a
    forward keeps) is rebound by the replay to the tensor the graph computes, and one the
    step deletes is deleted; these attributes are guarded by shape, dtype, device and
    ``requires_grad``. In a replayed forward that autograd differentiates later, such a
    tensor is a further output of the replayed Function, so a backward through it reaches
    the parameters as eagerly. A buffer the step rebinds (``self.running = self.running *
    0.9 + ...``; spectral_norm's ``weight_u``) traces once more, and from then on is read
    and rebound where its module holds it and guarded by metadata, not identity
    (:data:`.state.REBOUND_BUFFERS`). A step that changes a module's Python number
    (``self.calls += 1``) changes its own signature: it traces again, and after three such
    calls in a row runs eagerly, with a warning. A signature that comes back although its
    step changes it (the caller detaches a hidden state the forward keeps; a ``no_grad``
    call leaves a pruned weight without a graph) is compiled when it comes again.

    Values are recognised by identity. Python values the step reads further on are guarded
    too, read afresh on each call (:class:`.state.ValuesRead`): those of the dicts, lists,
    tuples and plain objects its code names (``cfg.scale``, ``CONFIG["lr"]``), its default
    arguments, the globals, closures and defaults of the functions it calls (a few levels
    deep), of its modules' forwards and hooks (those every module runs too), of tensor hooks
    and of the optimizers' step hooks (their own and every optimizer's), a custom
    optimizer's attributes and those the user set on one of tw's: numbers by value, tensors
    and other objects by identity, so a change traces again (a tensor the caller rebinds
    there, too; a hook added or removed). A tensor reached otherwise (an object of a
    library's class, deeper than the walk goes) is found by a search of live tensors
    (those ``gc.freeze()`` froze too); such a tensor that the step rebinds, and tensors the step
    stores anywhere but in parameters, buffers, gradients, optimizer state, arguments and
    the modules' attributes, are not updated by a replay; values read there are baked in
    (one that changes every call is caught by the two-trace check). Python side effects
    (appending to a list, logging) happen only on the calls that trace; one that changes a
    value the step reads (a count on an object it names) traces again, and runs eagerly
    after three such calls. A forward that registers a tensor hook on a tensor it computes
    runs eagerly (with a CompileWarning), so the hook runs once for each backward; so does
    a step whose Python values no guard can cover (more than 256 reads, or a wide dict or
    object read through ``.items()``, ``getattr`` or ``**``). Recording shadows the backend
    object's methods, so another thread using that backend during a trace is recorded too.
    """
    if mode not in _MODES:
        raise ValueError(f"tw.compile: unknown mode {mode!r}; expected one of {_MODES}")
    if backend not in (None, "eager", "inductor", "tensorweaver"):
        raise ValueError(
            f"tw.compile: unknown backend {backend!r}; expected None, 'inductor' or "
            "'tensorweaver' (the replay), or 'eager' (no capture)"
        )
    del dynamic, options

    def wrap(fn: Callable) -> Any:
        if not callable(fn):
            raise TypeError(f"tw.compile: expected a function or module, got {type(fn).__name__}")
        eager = disable or getattr(fn, DISABLED, False)
        wrapper = OptimizedModule if isinstance(fn, Module) else CompiledFunction
        return wrapper(fn, fullgraph, "eager" if eager else backend, mode)

    return wrap if model is None else wrap(model)
