"""A replayed forward that autograd can differentiate (``tw.compile(model)`` in training).

When a compiled function returns a tensor that requires grad and runs no backward itself
(a module's forward), the trace also runs the backward the tape would run for that output
(``tw.autograd.grad`` with a placeholder output gradient, recorded like the forward) and
builds two graphs: the forward, which also returns every value the backward needs, and the
backward, which takes those values and the output gradient and returns the gradient of
each input that requires grad (parameters, arguments). A replay joins them with an
autograd :class:`~tensorweaver.autograd.Function`, so ``loss.backward()`` after a replayed
forward runs the recorded backward graph and accumulates into ``.grad`` as eagerly.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from tensorweaver.autograd import grad as autograd_grad
from tensorweaver.autograd.function import Function, FunctionCtx, once_differentiable
from tensorweaver.compiler.graph import Graph, GraphBuilder, Unsupported, tuple_source
from tensorweaver.compiler.recorder import HostRead, Recorder
from tensorweaver.ops.creation import ones_like
from tensorweaver.tensor import Tensor


class DifferentiableGraph:
    """A forward graph and its backward graph, replayed as one autograd Function."""

    def __init__(self, forward: Graph, backward: Graph, inputs: list[Callable]) -> None:
        self.forward = forward
        self.backward = backward
        self.inputs = inputs  # getters of the tensors the backward gives gradients for
        self.source = forward.source + backward.source

    def ready(self) -> bool:
        return self.forward.ready()

    def compile(self, mode: Optional[str]) -> None:
        self.forward.compile(mode)
        self.backward.compile(mode)

    def same_as(self, other: Any) -> bool:
        return (
            isinstance(other, DifferentiableGraph)
            and self.forward.same_as(other.forward)
            and self.backward.same_as(other.backward)
        )

    def run(self, args: tuple, kwargs: dict) -> Tensor:
        inputs = [get(args, kwargs) for get in self.inputs]
        return _Replayed.apply(self, args, kwargs, *inputs)


class _Replayed(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, graph: DifferentiableGraph, args: tuple, kwargs: dict, *_):
        out, saved = graph.forward.run(args, kwargs)
        ctx.graph, ctx.values = graph, saved
        return out

    @staticmethod
    @once_differentiable  # the recorded backward has no graph of its own
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple:
        grads = ctx.graph.backward.run((ctx.values, grad.native), {})
        return (None, None, None, *grads)


def differentiable_graph(
    builder: GraphBuilder,
    result: Any,
    tail: list[str],
    backends: list[Any],
    fullgraph: bool,
) -> DifferentiableGraph:
    """Record the backward of ``result`` and build both graphs (``builder`` holds the
    forward's calls; ``tail`` its write-backs)."""
    if not isinstance(result, Tensor):
        raise Unsupported(
            "it returned several values that require grad and ran no backward: only a "
            "single tensor result of a compiled forward can be differentiated yet"
        )
    inputs: dict[int, tuple[Callable, Tensor]] = {}
    for _, getter, value, _, _ in builder.watched:
        if isinstance(value, Tensor) and value.requires_grad:
            inputs.setdefault(id(value), (getter, value))
    placeholder = ones_like(result)
    recorder = Recorder(backends, fullgraph)
    try:
        recorder.open()
        grads = autograd_grad(
            result,
            [t for _, t in inputs.values()],
            grad_outputs=placeholder,
            retain_graph=True,
            allow_unused=True,
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
    backward = back.build([], back.result(list(grads)))
    saved = tuple_source([builder.value(v) for v in back.saved])
    forward = builder.build(tail, tuple_source([builder.result(result), saved]))
    return DifferentiableGraph(forward, backward, [g for g, _ in inputs.values()])
