"""``tw.utils.checkpoint``: activation checkpointing, PyTorch's ``torch.utils.checkpoint``.

``checkpoint(function, *args)`` runs ``function`` and keeps no graph of it, only its inputs;
in backward it runs it again with gradients on and differentiates that. With
``preserve_rng_state=True`` (the default) both runs draw the same random numbers, so dropout
masks match and the gradients are those of the function without checkpointing.

How this differs from PyTorch, and why:

* Random streams: PyTorch saves the CPU generator and those of the inputs' devices; here
  the forward saves the default generator and the streams of the current device, of the
  inputs' devices and of every CPU backend with stream states (each has a stream of its
  own, where PyTorch's CPU draws share one; ``tw.random.save_streams``), the recomputation
  starts from them, and the streams are put back afterwards, so a checkpointed block draws
  what it draws without ``checkpoint``, as in PyTorch. The current or an input's backend
  without stream states (a third party's without the optional ``get_rng_state``/
  ``set_rng_state`` of API 2.5) is instead restarted from a seed drawn from it, with a
  ``tw.random.RngStateWarning``: the recomputation still repeats the forward's draws (the
  gradients are exact), but they differ from those without ``checkpoint``. Another CPU
  backend without states is left alone, so the block's draws there are not repeated.
* The non-reentrant variant (``use_reentrant=False``) runs the function as it runs without
  ``checkpoint``: an input may change in place, an output computed without a graph does
  not require grad, an input returned is returned itself, and outputs that view an input,
  a tensor from before the call or another output still do. The graph it built is then
  dropped: each output that has one gets instead the checkpoint's node, whose inputs are
  the call's tensors and the leaves that graph reached (so ``tw.autograd.grad`` reaches
  them and leaves ``.grad`` alone, as PyTorch's). PyTorch keeps the graph and drops only
  its saved tensors, recomputing them when backward first needs one, and stops the
  recomputation there (``early_stop``); here the recomputation runs the whole function
  whenever backward reaches the node, so code after the last saved op runs again, and a
  function whose ops save nothing is recomputed too. An input the function changed in
  place is recomputed from its value when the call began, giving the gradient of the
  forward, where PyTorch raises its in-place version error if it recomputes. Both run
  the recomputation under the forward's autocast state.
* The reentrant variant runs the function without a graph and differentiates only the
  tensors returned alone or in a returned tuple. Gradients reach the tensors in ``args``
  and the parameters of the modules ``function`` is, is a method of, names as globals, or
  holds in its closure or ``functools.partial`` (``checkpoint_sequential``'s segments):
  those also reach ``tw.autograd.grad``, with ``create_graph=True`` too (the gradients
  are then a checkpointed call of their own). Any other tensor that requires grad and
  that ``function`` reaches has the gradient added to its ``.grad``, as PyTorch's
  reentrant variant does for every parameter.
* ``context_fn``, ``determinism_check`` and ``debug`` are checked as PyTorch checks them;
  ``context_fn``'s two contexts wrap the forward and the recomputation. The determinism
  check compares the shapes, dtypes and devices of the recomputed outputs with the
  forward's (PyTorch compares those of its saved tensors) and raises ``CheckpointError``.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tensorweaver.amp import autocast_state, autocast_state_restored
from tensorweaver.autograd.engine import grad as _grad
from tensorweaver.autograd.function import Function
from tensorweaver.autograd.mode import enable_grad, is_grad_enabled
from tensorweaver.autograd.node import Node, saves_a_tensor
from tensorweaver.random import has_state, restore_streams, save_streams
from tensorweaver.registry import created_backends
from tensorweaver.selection import current_backend
from tensorweaver.tensor import Tensor

__all__ = [
    "CheckpointError",
    "CheckpointFunction",
    "CheckpointPolicy",
    "check_backward_validity",
    "checkpoint",
    "checkpoint_sequential",
    "create_selective_checkpoint_contexts",
    "detach_variable",
    "noop_context_fn",
    "set_checkpoint_debug_enabled",
    "set_checkpoint_early_stop",
]

_DETERMINISM_CHECKS = ("default", "none")
_NO_INPUT_NEEDS_GRAD = "None of the inputs have requires_grad=True. Gradients will be None"


_Contexts = tuple[contextlib.AbstractContextManager, contextlib.AbstractContextManager]


def noop_context_fn() -> _Contexts:
    """The default ``context_fn``: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def _flatten(value: Any, leaves: list) -> Callable[[Iterable], Any]:
    """Append the leaves of ``value`` (tuples, lists and dicts nest) to ``leaves``; return
    the function that rebuilds the structure from an iterator over new leaves."""
    # (the rebuilders keep the types, not ``value``: a checkpoint's node holds them, and the
    # outputs' graphs it frees must not stay reachable through them)
    kind = type(value)
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        parts = [_flatten(v, leaves) for v in value]
        return lambda it: kind(p(it) for p in parts)
    if isinstance(value, dict):
        parts = {k: _flatten(v, leaves) for k, v in value.items()}
        return lambda it: kind((k, p(it)) for k, p in parts.items())
    leaves.append(value)
    return lambda it: next(it)


def _module_parameters(function: Any) -> list[Tensor]:
    """The parameters of the modules ``function`` is, is bound to, or reaches (closure cells,
    the globals its code names, ``functools.partial``, lists and dicts of them), each once."""
    from tensorweaver.nn.modules.module import Module

    found: dict[int, Tensor] = {}
    seen: set[int] = set()
    pending = [function]
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Module):
            found.update((id(p), p) for p in item.parameters())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, functools.partial):
            pending.extend((item.func, *item.args, *item.keywords.values()))
        elif hasattr(item, "__self__") and hasattr(item, "__func__"):
            pending.extend((item.__self__, item.__func__))
        elif callable(item) and hasattr(item, "__code__"):
            pending.extend(cell.cell_contents for cell in item.__closure__ or () if _filled(cell))
            pending.extend(_named_globals(item))
    return list(found.values())


def _named_globals(function: Any) -> list:
    """The modules among the globals ``function``'s code (and the code of the functions
    defined in it) names: a module used by name is reached as one in a closure. Other
    globals are not followed (a helper function's own globals could be a whole library)."""
    from tensorweaver.nn.modules.module import Module

    names: set[str] = set()
    codes = [function.__code__]
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if hasattr(c, "co_names"))
    scope = getattr(function, "__globals__", {})
    values = (scope[n] for n in names if n in scope)
    return [v for v in values if isinstance(v, Module)]


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises ValueError
    except ValueError:
        return False
    return True


def _leaves_needing_grad(outputs: list[Tensor], stop: Iterable[Any] = ()) -> list[Tensor]:
    """The leaf tensors that require grad and that ``outputs`` were computed from, not
    looking behind the nodes in ``stop``."""
    found: dict[int, Tensor] = {}
    seen: set[int] = {id(node) for node in stop}
    pending = [t._node for t in outputs if t._node is not None]
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for parent in node.parents:
            if isinstance(parent, Tensor):
                found[id(parent)] = parent
            elif parent is not None:
                pending.append(parent)
    return list(found.values())


def _saves_a_tensor(outputs: list[Tensor], stop: list) -> bool:
    """Whether a node of the graph from ``outputs`` back to the nodes in ``stop`` saved a
    tensor (``autograd/node.py``'s ``saves_a_tensor``)."""
    seen: set[int] = {id(node) for node in stop}
    pending = [t._node for t in outputs if t._node is not None]
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if saves_a_tensor(node):
            return True
        pending.extend(p for p in node.parents if type(p) is Node)
    return False


class _Checkpoint(Function):
    """The checkpointed call as one node: inputs are the call's tensors and the parameters
    found, outputs its leaves. ``backward`` runs once per output (the engine's Function
    rule); the recomputation is made on the first call and kept for the others."""

    @staticmethod
    def forward(ctx: Any, run: Any, n_args: int, *tensors: Any) -> tuple:
        ctx.run, ctx.n_args = run, n_args
        ctx.inputs = tensors
        # Saved, so that backward checks their versions: the call's own tensors, not the
        # parameters found (PyTorch's recomputation reads those as they are then).
        saved = tensors if run.checks_parameters else tensors[:n_args]
        ctx.save_for_backward(*(t for t in saved if isinstance(t, Tensor)))
        ctx.recomputed = None
        done, run.done = run.done, None
        if done is not None:  # the non-reentrant variant ran the function already
            return tuple(done)
        with run.forward_context:
            return tuple(run(tensors[:n_args]))

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        if ctx.run.saves:
            _ = ctx.saved_tensors  # checks the saved inputs' versions, as PyTorch unpacks them
        if is_grad_enabled():
            return (None, None, *_differentiable_grads(ctx, grads))
        if ctx.recomputed is None:
            copies = _copies(ctx.inputs[: ctx.n_args])
            ctx.recomputed = _recompute(ctx, copies), copies
        outputs, leaves = ctx.recomputed
        params = ctx.inputs[ctx.n_args :]
        return (None, None, *_input_grads(outputs, leaves, params, grads, False))


def _copies(tensors: Any) -> list[Tensor]:
    """Leaf copies of ``tensors`` keeping ``requires_grad``: what backward differentiates."""
    return [t.detach().requires_grad_(t.requires_grad) for t in tensors]


def _differentiable_grads(ctx: Any, grads: tuple) -> list:
    """Under ``create_graph=True``: the gradients of the call's tensors and parameters, as
    the outputs of a checkpointed call of their own, so that a further backward recomputes
    them too. The other leaves the function reaches (found by one more recomputation) are
    its inputs as well, and get their differentiable gradients added to ``.grad``."""
    copies = _copies(ctx.inputs[: ctx.n_args])
    outputs = [o for o in _recompute(ctx, copies) if isinstance(o, Tensor)]
    params = ctx.inputs[ctx.n_args :]
    known = {id(t) for t in (*copies, *params)}
    others = [t for t in _leaves_needing_grad(outputs) if id(t) not in known]
    call = _Gradients(ctx, grads, [*params, *others])
    found = _Checkpoint.apply(call, len(call.tensors), *call.tensors, *call.params)
    for t, g in zip(others, found[len(ctx.inputs) :]):
        if g is not None:
            t.grad = g if t.grad is None else t.grad + g
    return list(found[: len(ctx.inputs)])


def _on_cpu(backend: Any) -> bool:
    return backend.device.kind == "cpu"


def _drawn(devices: list) -> list:
    """The backends whose streams a checkpointed function may draw from: ``devices`` (the
    current one and the inputs'), and every CPU backend made so far whose stream has a
    state, as PyTorch's one CPU generator serves every CPU draw (one without a state would
    have to be restarted, which changes its draws even where the function makes none). A
    CPU backend made later is put back at its first seed (``save_streams``'s ``later``)."""
    return [*devices, *(b for b in created_backends() if _on_cpu(b) and has_state(b))]


def _recompute(ctx: Any, copies: list) -> list:
    """Run the function again with gradients on, on ``copies`` of its tensor inputs, under
    the autocast state of its forward, drawing what the forward drew; return its output
    leaves (checked against the forward's, as ``determinism_check`` asks)."""
    run = ctx.run
    current = save_streams(_drawn(run.devices), "checkpoint") if run.streams is not None else None
    if run.streams is not None:
        restore_streams(run.streams)
    try:
        with enable_grad(), autocast_state_restored(run.autocast), run.recompute_context:
            given = copies
            if run.nested:
                # A non-leaf input stays one (over its copy), so that the function may
                # change it in place, as in PyTorch, whose recomputation runs on the input.
                given = [c if t.is_leaf else c.clone() for t, c in zip(ctx.inputs, copies)]
            outputs = list(run(given))
    finally:
        if current is not None:
            restore_streams(current)
    run.check(outputs)
    return outputs


def _input_grads(outputs: list, copies: list, params: Any, grads: Any, create_graph: bool) -> list:
    """The gradients, for ``grads`` of the recomputed ``outputs``, of the ``copies`` of the
    call's tensors and of ``params``, in that order. Other leaves reached get theirs added
    to ``.grad``, except in a recomputation of gradients (``create_graph``), where they are
    among ``params``."""
    pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
    wanted = [t for t in copies if t.requires_grad] + [p for p in params if p.requires_grad]
    known = {id(t) for t in wanted}
    others = [] if create_graph else _leaves_needing_grad([o for o, _ in pairs])
    others = [t for t in others if id(t) not in known]
    found = {}
    if pairs and wanted + others:
        gs = _grad(
            [o for o, _ in pairs],
            wanted + others,
            [g for _, g in pairs],
            retain_graph=True,
            create_graph=create_graph,
            allow_unused=True,
        )
        found = {id(t): g for t, g in zip(wanted + others, gs)}
    for t in others:
        g = found[id(t)]
        if g is not None:
            t.grad = g if t.grad is None else t.grad + g
    return [found.get(id(t)) for t in (*copies, *params)]


class _Gradients:
    """The call ``_Checkpoint.apply`` makes for gradients under ``create_graph=True``: from
    the checkpointed call's tensors and output gradients to the gradients of those tensors
    and of ``params``, recomputing the checkpointed function each time."""

    forward_context = recompute_context = contextlib.nullcontext()
    # What _Checkpoint reads of a call: this one recomputes through the checkpointed call's
    # own ctx, which restores the streams and the autocast state and checks the outputs.
    nested, devices, streams, autocast, done = False, (), None, None, None
    saves = True  # it recomputes from the call's tensors: their versions are checked
    # The parameters too: PyTorch's create_graph backward built the gradients' graph from
    # their values then, which a later in-place change would make this recomputation miss
    # (where that graph saves no parameter PyTorch runs on; raising is the safe side).
    checks_parameters = True

    def check(self, outputs: list) -> None:
        """Nothing to check: the checkpointed call's recomputation checks its outputs."""

    def __init__(self, ctx: Any, grads: tuple, params: list) -> None:
        self.ctx, self.grads, self.params = ctx, grads, params
        self.tensors = [*ctx.inputs[: ctx.n_args], *(g for g in grads if isinstance(g, Tensor))]

    def __call__(self, tensors: Any) -> list:
        ctx, n = self.ctx, self.ctx.n_args
        # Called by _Checkpoint.forward (no graph: values only, from detached copies), or by
        # its recomputation, on copies that are leaves already (the graph must reach them).
        create = is_grad_enabled()
        args = tensors[:n]
        if not create:
            args = [t.detach().requires_grad_(t.requires_grad) for t in args]
        given = iter(tensors[n:])
        grads = [next(given) if isinstance(g, Tensor) else g for g in self.grads]
        outputs = _recompute(ctx, args)
        return _input_grads(outputs, args, self.params, grads, create)


class _Call:
    """``function(*args, **kwargs)`` with the tensors (positional, then in kwargs) swapped for
    the ones given, returning the flat leaves of the result; remembers how to rebuild it,
    and what the recomputation needs to repeat the forward: the random streams (``streams``
    None: not preserved), the autocast state and the forward's output metadata."""

    # PyTorch's recomputation reads the parameters as they are when backward runs.
    checks_parameters = False

    def __init__(
        self, function: Callable, args: tuple, kwargs: dict, contexts: tuple, nested: bool
    ) -> None:
        self.function, self.nested = function, nested
        self.leaves: list = []
        self.rebuild_args = _flatten((args, kwargs), self.leaves)
        self.forward_context, self.recompute_context = contexts
        self.rebuild_output: Callable[[Iterable], Any] | None = None
        self.devices: list = []
        self.streams: Any = None
        self.autocast = autocast_state()
        self.done: list | None = None  # the forward's output leaves, when already computed
        self.metadata: list | None = None  # the forward's, where determinism is checked
        # Whether the function's graph saved a tensor: the non-reentrant variant checks its
        # inputs' versions only then, as PyTorch's recomputes only when one is unpacked.
        self.saves = True

    def tensors(self) -> list[Tensor]:
        return [leaf for leaf in self.leaves if isinstance(leaf, Tensor)]

    def save_streams(self, tensors: list[Tensor]) -> None:
        """Save the streams the function may draw from (the current device's, the inputs'
        devices' and every CPU backend's), before it runs."""
        self.devices = [current_backend(), *(t.backend for t in tensors)]
        self.streams = save_streams(_drawn(self.devices), "checkpoint", _on_cpu)

    def __call__(self, tensors: Any) -> list:
        swap = iter(tensors)
        leaves = [next(swap) if isinstance(x, Tensor) else x for x in self.leaves]
        args, kwargs = self.rebuild_args(iter(leaves))
        out = self.function(*args, **kwargs)
        if self.nested:
            out_leaves: list = []
            self.rebuild_output = _flatten(out, out_leaves)
            return out_leaves
        # The reentrant variant, as PyTorch's Function: only the tensors of a returned tuple
        # are differentiable; tensors nested deeper come back without a graph.
        self.rebuild_output = tuple if isinstance(out, tuple) else lambda it: next(it)
        return list(out) if isinstance(out, tuple) else [out]

    def check(self, outputs: list) -> None:
        """Raise ``CheckpointError`` where the recomputed outputs' shapes, dtypes or devices
        are not the forward's (PyTorch compares its saved tensors)."""
        if self.metadata is None:
            return
        got = _metadata(outputs)
        if len(got) != len(self.metadata):
            raise CheckpointError(
                "tw.utils.checkpoint: A different number of tensors was returned during the "
                f"original forward ({len(self.metadata)}) and recomputation ({len(got)}): "
                "the checkpointed function must compute the same thing each time it runs "
                "(or pass determinism_check='none')"
            )
        different = "".join(
            f"tensor at position {i}:\nsaved metadata: {before}\nrecomputed metadata: {now}\n"
            for i, (before, now) in enumerate(zip(self.metadata, got))
            if before != now
        )
        if different:
            raise CheckpointError(
                "tw.utils.checkpoint: Recomputed values for the following tensors have "
                f"different metadata than during the forward pass.\n{different}"
                "The checkpointed function must compute the same thing each time it runs "
                "(or pass determinism_check='none')"
            )


def _metadata(leaves: list) -> list[dict]:
    return [
        {"shape": t.shape, "dtype": t.dtype, "device": t.device}
        for t in leaves
        if isinstance(t, Tensor)
    ]


def _non_reentrant(call: _Call, tensors: list[Tensor], check: bool) -> Any:
    """PyTorch's non-reentrant checkpoint: the function runs as it would without
    ``checkpoint`` (an input may change in place; an output computed without a graph does
    not require grad); the outputs that have a graph get the checkpoint's node in place of
    it, whose inputs are the call's tensors as they entered and the leaves the graph
    reached, so that the graph's memory is freed now and recomputed in backward."""
    entering = [(t, t._version, t._snapshot()) for t in tensors]
    with call.forward_context:
        done = call(tensors)
    given = {id(t) for t in tensors}
    graphed = [
        isinstance(o, Tensor) and o.requires_grad and not o.is_leaf and id(o) not in given
        for o in done
    ]
    if not any(graphed):  # nothing to recompute: no graph, or the inputs returned
        return call.rebuild_output(iter(done))
    # An input changed in place in the function enters the node as it was (its graph now
    # runs through the function's ops); the others as themselves, so that a later change
    # raises in backward as PyTorch's saved inputs do.
    inputs = [now if now._version == version else before for now, version, before in entering]
    stop = [t._node for t in inputs if t._node is not None]
    outputs = [o for o, g in zip(done, graphed) if g]
    params = [t for t in _leaves_needing_grad(outputs, stop) if id(t) not in given]
    call.metadata = _metadata(done) if check else None
    call.saves = _saves_a_tensor(outputs, stop)
    # New tensors over the values: the node keeps them (zeros for the other outputs' gradients),
    # not their graphs (a detach() would keep the output it is a view of).
    call.done = [Tensor(o.native, o.backend, o.dtype) if isinstance(o, Tensor) else o for o in done]
    flat = _Checkpoint.apply(call, len(inputs), *inputs, *params)
    return call.rebuild_output(iter(_aliased(done, flat, graphed, given, stop)))


def _aliased(done: list, flat: tuple, graphed: list, given: set, stop: list) -> list:
    """The call's outputs, those with a graph replaced by the checkpoint node's, keeping
    the memory they share as PyTorch's outputs do: one tensor returned twice is one output;
    a view of an input, of a leaf or of a tensor from before the call is returned itself
    (its graph is its view ops, which save nothing); a view of another output is made again
    over that output's replacement, so that in-place changes of either show in both."""
    made: dict[int, Any] = {}
    derived: dict[int, list] = {}  # a view of another output: the views up to that output
    returned = {id(o) for o, g in zip(done, graphed) if g}
    before = {id(node) for node in stop}
    for o, f, g in zip(done, flat, graphed):
        if not g or id(o) in made or id(o) in derived:
            continue
        chain = _views_up(o)
        outer = [i for i, t in enumerate(chain) if id(t) in returned and t is not o]
        if any(id(t) in given or t.is_leaf or id(t._node) in before for t in chain):
            made[id(o)] = o
        elif outer:  # (the farthest such output is itself no view of another one)
            derived[id(o)] = chain[: outer[-1] + 1]
        else:
            made[id(o)] = f
    for key, chain in derived.items():
        made[key] = _view_again(chain[:-1], made[id(chain[-1])])
    return [made[id(o)] if g else o for o, g in zip(done, graphed)]


def _views_up(t: Tensor) -> list[Tensor]:
    """``t`` and the tensors it is a view of, nearest first."""
    chain = [t]
    while t._view_of is not None:
        t = t._view_of[0]
        chain.append(t)
    return chain


def _view_again(chain: list[Tensor], base: Tensor) -> Tensor:
    """The view ``chain[0]`` of ``chain[-1]``'s base (``chain``: views, nearest first)
    taken again, the same way, over ``base``."""
    from tensorweaver.ops.views import as_view

    for view in reversed(chain):
        _, write, read = view._view_of[:3]
        base = as_view(read(base), base, write, read, getattr(write, "region", None))
    return base


def checkpoint(
    function: Callable,
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable[[], tuple] = noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    **kwargs: Any,
) -> Any:
    """Run ``function(*args, **kwargs)`` without keeping its graph; recompute it in backward
    (``preserve_rng_state=True``: with the same random draws). Returns what it returns."""
    if use_reentrant is None:
        warnings.warn(
            "tw.utils.checkpoint: the use_reentrant parameter should be passed explicitly "
            "(as in PyTorch, which defaults to use_reentrant=True and recommends False)",
            UserWarning,
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant and (context_fn is not noop_context_fn or debug is not False):
        raise ValueError(
            "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
        )
    # PyTorch's reentrant variant never looks at determinism_check.
    if not use_reentrant and determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(
            f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, but got "
            f"{determinism_check}"
        )
    call = _Call(function, args, kwargs, context_fn(), not use_reentrant)
    tensors = call.tensors()
    if preserve:
        call.save_streams(tensors)
    if not use_reentrant:
        return _non_reentrant(call, tensors, determinism_check == "default")
    params = _module_parameters(function)
    if not any(t.requires_grad for t in tensors):
        # PyTorch's reentrant variant records nothing then: no parameter gets a gradient.
        warnings.warn(_NO_INPUT_NEEDS_GRAD, stacklevel=2)
        params = []
    flat = _Checkpoint.apply(call, len(tensors), *tensors, *params)
    return call.rebuild_output(iter(flat))


def checkpoint_sequential(
    functions: Any,
    segments: int,
    input: Tensor,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Run ``functions`` (a ``nn.Sequential`` or a list of callables) in ``segments``
    checkpointed pieces; the last piece runs normally, as in PyTorch."""
    if use_reentrant is None:
        warnings.warn(
            "tw.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly (as in PyTorch, which defaults to use_reentrant=True and "
            "recommends False)",
            UserWarning,
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from tensorweaver.nn.modules.container import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    size = len(functions) // segments

    def run(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for f in functions[start:end]:
                x = f(x)
            return x

        return forward

    end = 0
    for start in range(0, size * (segments - 1), size):
        end = start + size
        input = checkpoint(
            run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve
        )
    return run(end, len(functions))(input)


class CheckpointFunction:
    """PyTorch's reentrant checkpoint as its ``autograd.Function`` is called by older code:
    ``CheckpointFunction.apply(function, preserve_rng_state, *args)``."""

    @staticmethod
    def apply(function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
        return checkpoint(
            function, *args, use_reentrant=True, preserve_rng_state=preserve_rng_state
        )


def detach_variable(inputs: tuple) -> tuple:
    """``inputs`` with each tensor detached, keeping its ``requires_grad``; other values pass
    unchanged. Only a tuple is accepted, as in PyTorch."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(
            "detach_variable: only a tuple of tensors is supported, got "
            f"{type(inputs).__name__}; pass tuple(inputs)"
        )
    return tuple(
        x.detach().requires_grad_(x.requires_grad) if isinstance(x, Tensor) else x for x in inputs
    )


def check_backward_validity(inputs: Iterable[Any]) -> None:
    """Warn that gradients will be None when no tensor in ``inputs`` requires grad."""
    if not any(x.requires_grad for x in inputs if isinstance(x, Tensor)):
        warnings.warn(_NO_INPUT_NEEDS_GRAD, stacklevel=2)


class CheckpointError(RuntimeError):
    """A recomputation that cannot match its forward (PyTorch's class)."""


class CheckpointPolicy(enum.Enum):
    """What selective checkpointing does with an op's output (PyTorch's names)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


def create_selective_checkpoint_contexts(
    policy_fn_or_list: Any, allow_cache_entry_mutation: bool = False
) -> _Contexts:
    """The ``context_fn`` contexts of selective checkpointing. Here every op of a
    checkpointed function is recomputed, whatever the policy (there is no per-op hook in
    the IR to save some outputs): the gradients are the same, backward costs more."""
    if not (callable(policy_fn_or_list) or isinstance(policy_fn_or_list, list)):
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    return noop_context_fn()


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Iterator[None]:
    """Accepted for PyTorch's API: a recomputation here always runs the whole function."""
    yield


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None) -> Iterator[None]:
    """Accepted for PyTorch's API: ``debug`` output is not produced here."""
    yield
