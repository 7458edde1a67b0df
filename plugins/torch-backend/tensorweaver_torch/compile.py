"""The optional ``compile_graph`` hook of the backend API 2.4: a tw.compile'd step's calls
handed to ``torch.compile`` (inductor), which fuses them into a few kernels.

A graph whose inputs are all tensors is first traced by ``make_fx`` into an FX graph of
ATen operations, which torch.compile then compiles (:class:`_Traced`): Dynamo's guards then
cover that graph's tensors only, not every method and constant of the replay's Python,
and make_fx follows the fused composites that this backend records with torch's autograd
(``_record`` in :mod:`.fused`), which stop Dynamo's tracer. A graph with Python floats
among its inputs (a learning rate or bias correction the replay recomputes) goes to
torch.compile as it is, since make_fx would bake the numbers in; there Dynamo compiles
the pieces between the calls it cannot trace. Where a graph holds both the forward and the
backward of a composite, forms written with torch's explicit backward kernels replace it
(:func:`_traceable`: same kernels, so the same values up to fusion's rounding).

The first call of a compiled graph traces and compiles it (seconds); the next few calls
time it against the core's replay of the same calls and keep the faster (:class:`_Faster`).
Where inductor cannot work (no C++ compiler on the machine, a broken toolchain), that first
call fails: the graph then runs as the core replays it, and so does every graph after it in
this process, with one warning; a failure of one graph only (make_fx or Dynamo refusing
something in it) leaves that graph to the replay, with a warning, and the next is tried.
Graphs that draw random numbers are left to the core's replay, so that their draws come
from this backend's generator as eagerly (inductor would draw its own), dropout between
the layers of a recurrent kernel included.

A recurrent kernel (``fused_rnn``) of float32 on the CPU is traced by make_fx into oneDNN's
RNN layers, forward and backward, which inductor cannot wrap: the traced graph calls them
through opaque operators of this module instead (:func:`_opaque_rnn_layers`), so that
inductor runs them as external kernels and fuses everything around them. A recurrent
kernel traced into anything else (torch's per-step kernels: float64, GRU, vanilla RNN,
every step of the sequence a few nodes, compiled for seconds more per step) or a packed
one leaves its graph to the core's replay.

A float ``remainder`` on the CPU runs through an opaque operator of this module, the eager
kernel with its repair (:func:`_remainder`), where inductor's own would give NaN.

Inductor's CPU vector width is set explicitly (``cpu_loops.inductor_options``), which keys its
on-disk cache by it: code cached under another ATEN_CPU_CAPABILITY is not reused.

A step's in-place updates (parameters, optimizer state: :attr:`GraphRecord.donated`) are
written by the compiled graph into the arrays they replace (``copy_`` into its inputs, which
inductor stores into directly), as PyTorch's optimizers update in place, rather than into
new arrays the core then rebinds the tensors to.
"""

from __future__ import annotations

import ast
import functools
import time
import warnings
from types import FunctionType
from typing import Any, Callable

import torch
import torch.nn.functional as F
from tensorweaver.contract.cpu_loops import inductor_options
from torch import Tensor

aten = torch.ops.aten

#: tw.compile's modes that torch.compile knows (None and "default" are its default).
_MODES = frozenset({"reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"})
_RANDOM = ("random", "dropout", "seed")
#: Composites left to the core's replay: the packed recurrent kernel (its batch sizes
#: take torch's per-step path, see the module's docstring).
_OPAQUE = frozenset({"fused_rnn_packed"})
_RECURRENT = "fused_rnn"
_unavailable: list[str] = []  # why inductor cannot build code in this process, once seen
_failed_graphs: set[str] = set()  # why single graphs failed (each said once)
_libraries: list[Any] = []  # torch drops a library's operators when it is collected


class CompiledGraphs:
    """Mixed into the backend class."""

    def compile_graph(self, graph: Any) -> Callable[..., tuple] | None:
        """``graph.fn`` compiled by ``torch.compile``; None (the core replays it) when the
        graph draws random numbers, runs a recurrent kernel other than a float32 LSTM
        (module docstring), or inductor has failed before in this process."""
        if _unavailable or any(_declined(graph, c) for c in graph.calls):
            return None
        mode = graph.mode if graph.mode in _MODES else None
        fn = graph.rebind(_traceable(self, {c.primitive for c in graph.calls}))
        recurrent = any(c.primitive == _RECURRENT for c in graph.calls)
        donated = [(graph.outputs.index(o), graph.inputs.index(i)) for o, i in graph.donated]
        if any(name not in graph.values for name in graph.inputs):  # Python floats
            if recurrent:  # Dynamo cannot trace the kernel's recording (see _Traced)
                return None
            # Dynamo keeps a number that changes between calls an input, where make_fx
            # would bake it into the graph.
            compiled = _Traced(_plain_constants(graph, fn), mode, donated=donated, trace=False)
        else:
            compiled = _Traced(fn, mode, recurrent, donated)
        return _Faster(compiled, graph.fn)


def _declined(graph: Any, call: Any) -> bool:
    """Whether ``call`` leaves its graph to the core's replay: it draws random numbers, or
    is a recurrent kernel that torch runs step by step (see the module's docstring)."""
    if call.primitive in _OPAQUE:
        return True
    if call.primitive != _RECURRENT:
        return any(w in call.primitive for w in _RANDOM)
    # (x, *states, *weights, mode, num_layers, bidirectional, has_bias, dropout, training)
    mode, layers, _, _, dropout, training = (_static(graph, a) for a in call.args[-6:])
    x = call.args[0]  # a value of the graph, or a constant array
    dtype = graph.values[x][1] if x in graph.values else getattr(graph.constants[x], "dtype", None)
    onednn = mode == "LSTM" and dtype == torch.float32 and torch.backends.mkldnn.is_available()
    return not onednn or bool(dropout and training and layers > 1)


def _static(graph: Any, arg: str) -> Any:
    """The value of a static argument of a call, as :class:`Call` spells it (a constant's
    name or a literal)."""
    if arg in graph.constants:
        return graph.constants[arg]
    return ast.literal_eval(arg)


class _Traced:
    """``fn`` traced on its first call into an FX graph of ATen operations (``make_fx``),
    which ``torch.compile`` then compiles.

    Dynamo then guards the graph's tensors alone, where on ``fn`` itself it also guards
    every backend method and constant the replay's Python reads (about 2,000 checks for
    a Transformer step of 1,200 calls: 0.6-1 ms a call); and make_fx follows what Dynamo
    cannot (a composite recorded with torch's autograd), so that the graph stays whole.

    With ``trace=False`` (a graph with Python floats among its inputs, which make_fx would
    bake in), torch.compile gets ``fn`` itself.

    ``donated`` pairs (output, input) by position (:attr:`GraphRecord.donated`): the
    compiled graph writes each such output into its input's memory, in place, as
    PyTorch's optimizers update parameters (no new arrays to allocate and fill), where no
    output of the graph shares that memory. A call whose input's memory something else
    shares (a view of it) has that input copied first, so that only the copy changes.
    """

    def __init__(
        self,
        fn: Callable,
        mode: str | None,
        recurrent: bool = False,
        donated: list[tuple[int, int]] | None = None,
        trace: bool = True,
    ) -> None:
        self.fn, self.mode, self.recurrent, self.trace = fn, mode, recurrent, trace
        self.donated = donated or []
        self.compiled: Callable | None = None

    def __call__(self, *inputs: Any) -> tuple:
        if self.compiled is None:
            from torch.fx.experimental.proxy_tensor import make_fx

            # (make_fx runs fn on what it is given: a graph that writes into an input, as
            # into memory shared with NumPy, would write twice on this first call)
            graph = make_fx(self.fn)(*map(_stand_in, inputs)) if self.trace else self.fn
            if self.recurrent and not _opaque_rnn_layers(graph):
                # torch's per-step kernels after all (oneDNN turned off): the replay serves
                self.compiled, self.donated = self.fn, []
            else:
                if self.donated:  # (one eager run shows which outputs share memory)
                    self.donated = _unaliased(self.donated, graph(*inputs), inputs)
                if self.donated:
                    graph = _writing_into_inputs(graph, self.donated)
                self.compiled = _keeping_validation(
                    torch.compile,
                    graph,
                    dynamic=False if self.trace else None,
                    options=inductor_options(self.mode),
                )
        if self.donated and any(_storage_shared(inputs[i]) for _, i in self.donated):
            inputs = tuple(
                x.clone() if any(i == j for _, j in self.donated) else x
                for i, x in enumerate(inputs)
            )
        return self.compiled(*inputs)


def _stand_in(x: Any) -> Any:
    """A copy of the tensor ``x`` (its layout and flag kept) for tracing; other values as
    they are."""
    if not isinstance(x, Tensor):
        return x
    with torch.no_grad():
        copy = x.clone(memory_format=torch.preserve_format)
    return copy.requires_grad_(x.requires_grad)


def _unaliased(
    donated: list[tuple[int, int]], outputs: tuple, inputs: tuple
) -> list[tuple[int, int]]:
    """The pairs of ``donated`` whose input no output (of an eager run) shares memory with:
    writing into that input would change such an output too."""
    taken = {o.untyped_storage().data_ptr() for o in outputs if isinstance(o, Tensor)}
    return [(o, i) for o, i in donated if inputs[i].untyped_storage().data_ptr() not in taken]


def _writing_into_inputs(graph: Callable, donated: list[tuple[int, int]]) -> Callable:
    """``graph`` writing each donated output into its input (``copy_``, which torch.compile
    turns into kernels that store into the input's memory) and returning that input: an FX
    graph changed so, a function (Dynamo's to trace) wrapped."""
    if not isinstance(graph, torch.fx.GraphModule):

        def into_inputs(*inputs: Any) -> tuple:
            outputs = list(graph(*inputs))
            for o, i in donated:
                outputs[o] = inputs[i].copy_(outputs[o])
            return tuple(outputs)

        return into_inputs
    nodes = graph.graph.nodes
    inputs = [n for n in nodes if n.op == "placeholder"]
    (end,) = (n for n in nodes if n.op == "output")
    outputs = list(end.args[0])
    with graph.graph.inserting_before(end):
        for o, i in donated:
            outputs[o] = graph.graph.call_function(aten.copy_.default, (inputs[i], outputs[o]))
    end.args = (tuple(outputs),)
    graph.recompile()
    return graph


def _storage_shared(x: Tensor) -> bool:
    """Whether another tensor (a view) holds ``x``'s memory: references to it are ``x``'s
    own and the storage object asked."""
    return torch._C._storage_Use_Count(x.untyped_storage()._cdata) > 2


def _opaque_rnn_layers(graph: torch.fx.GraphModule) -> int:
    """Make ``graph`` call oneDNN's RNN layers and their backwards through this module's
    opaque operators; how many calls it changed. Inductor's own wrapper of those ATen
    operators passes None for the workspace the backward needs (torch 2.13)."""
    opaque = _rnn_layer_operators()
    changed = 0
    for node in graph.graph.nodes:
        if node.op == "call_function" and node.target in opaque:
            node.target = opaque[node.target]
            changed += 1
    if changed:
        graph.recompile()
    return changed


@functools.cache
def _rnn_layer_operators() -> dict[Any, Any]:
    """oneDNN's RNN layer and its backward (ATen operators) -> operators of this module
    that call them, which inductor runs as they are. The layer keeps its workspace (what
    its backward reads) only while grad mode is on, and compiled code runs with it off:
    the forward turns it on (its inputs need no grad, so nothing is recorded). Defined
    with ``torch.library.Library``, not ``custom_op``, whose autograd and Dynamo wrappers
    would run on every call."""
    library = torch.library.Library("tensorweaver_torch", "DEF")
    layer, backward = aten.mkldnn_rnn_layer.default, aten.mkldnn_rnn_layer_backward.default

    def forward_kernel(*args: Any) -> tuple:
        with torch.enable_grad():
            return layer(*args)

    opaque = {}
    for aten_op, kernel in ((layer, forward_kernel), (backward, backward)):
        name = aten_op._schema.name.split("::")[1]
        library.define(name + _schema_of(aten_op))
        library.impl(name, kernel, "CompositeExplicitAutograd")
        torch.library.register_fake(f"tensorweaver_torch::{name}", aten_op, lib=library)
        opaque[aten_op] = getattr(torch.ops.tensorweaver_torch, name).default
    _libraries.append(library)
    return opaque


def _schema_of(op: Any) -> str:
    """``op``'s schema without its name (``(Tensor input, ...) -> (Tensor, ...)``)."""
    text = str(op._schema)
    return text[text.index("(") :]


def _plain_constants(graph: Any, fn: Callable) -> Callable:
    """``fn`` reading its shape constants as plain tuples: Dynamo cannot pass a tuple
    subclass (``tw.Size``) to a torch function, and would break the graph in pieces there
    (each piece's guards cost about 0.1 ms a call)."""
    plain = {
        name: tuple(value)
        for name, value in graph.constants.items()
        if isinstance(value, tuple) and type(value) is not tuple
    }
    if not plain:
        return fn
    return FunctionType(fn.__code__, {**fn.__globals__, **plain}, fn.__name__)


def _traceable(backend: Any, used: set[str]) -> dict[str, Callable]:
    """Forms of ``backend``'s methods that torch.compile traces better: ``full``, and the
    fused composites whose forward and backward are both in ``used`` (a forward's
    ``saved`` changes form, so both must)."""

    def full(shape: tuple, value: Any, dtype: Any) -> Tensor:
        # torch.full (or any look at the number) would make the tracer bake a number that
        # changes every step (Adam's bias corrections) into the graph, and compile again on
        # every step; a product keeps it an input.
        ones = backend.full(shape, 1, dtype)
        return ones * value if ones.is_floating_point() else backend.full(shape, value, dtype)

    forms = {
        "fused_cross_entropy": (_cross_entropy, _cross_entropy_backward),
        "fused_softmax": (_softmax, _softmax_backward),
        "fused_log_softmax": (_log_softmax, _log_softmax_backward),
        "fused_embedding": (_embedding, _embedding_backward),
    }
    out: dict[str, Callable] = {"full": full, **_FOREACH}
    if "remainder" in used:
        out["remainder"] = functools.partial(_remainder, backend.remainder)
    for name, (forward, backward) in forms.items():
        if name in used and f"{name}_backward" in used:
            out[name], out[f"{name}_backward"] = forward, backward
    return out


def _remainder(eager: Callable, a: Any, b: Any) -> Tensor:
    """``remainder`` of floats on the CPU through an opaque operator that runs ``eager``
    (the backend's kernel and its repair): inductor's kernel gives NaN where ``a / b``
    overflows (float32 1.5 % -1e-45), as torch's vectorised one does, which the eager
    backend repairs. Other remainders stay ATen's, which inductor fuses."""
    if (
        isinstance(a, Tensor)
        and isinstance(b, Tensor)
        and torch.result_type(a, b).is_floating_point
        and a.device.type == "cpu"
    ):
        return _remainder_operator(eager)(a, b)
    return torch.remainder(a, b)


@functools.cache
def _remainder_operator(eager: Callable) -> Any:
    """An operator of this module that runs ``eager`` as it is (see :func:`_remainder`)."""
    library = torch.library.Library("tensorweaver_torch_remainder", "DEF")
    library.define("remainder" + _schema_of(aten.remainder.Tensor))
    library.impl("remainder", eager, "CompositeExplicitAutograd")
    torch.library.register_fake(
        "tensorweaver_torch_remainder::remainder", aten.remainder.Tensor, lib=library
    )
    _libraries.append(library)
    return torch.ops.tensorweaver_torch_remainder.remainder.default


# The foreach primitives per tensor, with their numbers as operands: torch's _foreach_* ops
# take them as constants of the graph, so a number that changes every step (Adam's bias
# corrections, a scheduled learning rate) would compile it again every step; inductor fuses
# the per-tensor forms as well.
_FOREACH: dict[str, Callable] = {
    "foreach_add": lambda xs, ys, alpha: [x + y * alpha for x, y in zip(xs, ys)],
    "foreach_mul": lambda xs, scalar: [x * scalar for x in xs],
    "foreach_add_scalar": lambda xs, scalar: [x + scalar for x in xs],
    "foreach_div_scalars": lambda xs, scalars: [x / s for x, s in zip(xs, scalars)],
    "foreach_lerp": lambda xs, ys, weight: [x + (y - x) * weight for x, y in zip(xs, ys)],
    "foreach_addcmul": lambda xs, ys, zs, value: [x + y * z * value for x, y, z in zip(xs, ys, zs)],
    "foreach_addcdiv": lambda xs, ys, zs, values: [
        x + y / z * v for x, y, z, v in zip(xs, ys, zs, values)
    ],
}


def _cross_entropy(x: Tensor, target: Tensor, ignore_index: int) -> tuple[Tensor, tuple]:
    logp = torch.log_softmax(x, 1)
    loss = F.nll_loss(logp, target, ignore_index=ignore_index)
    return loss, (logp, target, ignore_index)


def _cross_entropy_backward(saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
    logp, target, ignore_index = saved
    kept = (target != ignore_index).sum().to(logp.dtype)
    mean = 1  # torch's Reduction::Mean
    grad = torch.ops.aten.nll_loss_backward(
        grad_output, logp, target, None, mean, ignore_index, kept
    )
    grad = torch.ops.aten._log_softmax_backward_data(grad, logp, 1, logp.dtype)
    return (grad,) + (None,) * (len(needs) - 1)


def _softmax(x: Tensor, axis: int) -> tuple[Tensor, tuple]:
    out = torch.softmax(x, axis)
    return out, (out, axis)


def _softmax_backward(saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
    out, axis = saved
    return (torch.ops.aten._softmax_backward_data(grad_output, out, axis, out.dtype),)


def _log_softmax(x: Tensor, axis: int) -> tuple[Tensor, tuple]:
    out = torch.log_softmax(x, axis)
    return out, (out, axis)


def _log_softmax_backward(saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
    out, axis = saved
    return (torch.ops.aten._log_softmax_backward_data(grad_output, out, axis, out.dtype),)


def _embedding(weight: Tensor, indices: Tensor, padding_idx: int | None) -> tuple[Tensor, tuple]:
    out = F.embedding(indices, weight, padding_idx)
    return out, (indices, weight.shape[0], padding_idx)


def _embedding_backward(saved: tuple, grad_output: Tensor, needs: tuple) -> tuple:
    indices, rows, padding_idx = saved
    padding = -1 if padding_idx is None else padding_idx  # aten's "no padding row"
    grad = torch.ops.aten.embedding_dense_backward(grad_output, indices, rows, padding, False)
    return (grad if needs[0] else None,) + (None,) * (len(needs) - 1)


def _keeping_validation(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, leaving torch.distributions' argument checks as they were:
    torch.compile's first use turns them off for the whole process, which a user who asked
    tw.compile for a faster step did not ask for."""
    from torch.distributions import Distribution

    before = Distribution._validate_args
    try:
        return fn(*args, **kwargs)
    finally:
        Distribution.set_default_validate_args(before)


class _Faster:
    """``compiled`` or ``plain``, whichever runs the graph faster here.

    The first call compiles (seconds); if that fails, ``plain`` serves for good. The next
    calls alternate between the two, timed, until each has run ``TRIALS`` times; then the
    faster one (by its best time) serves. Both are pure functions of the inputs and agree
    within rounding, so which one ran a given call does not matter. Inductor loses on tiny
    graphs, where its guards cost more than the replay's calls, and can lose on kernels it
    writes worse than torch's own.
    """

    TRIALS = 3

    def __init__(self, compiled: Callable, plain: Callable) -> None:
        self.compiled, self.plain = compiled, plain
        # (GraphRecord.donated: the core then keeps apart arrays that others hold)
        self.writes_donated = bool(getattr(compiled, "donated", None))
        self.chosen: Callable | None = None
        self.times: dict[Callable, list[float]] = {compiled: [], plain: []}
        self.started = False

    def __call__(self, *inputs: Any) -> tuple:
        if self.chosen is not None:
            return self.chosen(*inputs)
        if not self.started:
            self.started = True
            return self._compile(*inputs)
        trial = min(self.times, key=lambda f: len(self.times[f]))
        start = time.perf_counter()
        result = trial(*inputs)
        self.times[trial].append(time.perf_counter() - start)
        if all(len(t) >= self.TRIALS for t in self.times.values()):
            self.chosen = min(self.times, key=lambda f: min(self.times[f]))
        return result

    def _compile(self, *inputs: Any) -> tuple:
        if _unavailable:
            self.chosen = self.plain
            return self.plain(*inputs)
        try:
            return _keeping_validation(self.compiled, *inputs)
        except Exception as exc:  # torch._dynamo and inductor raise many kinds
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            if _toolchain_failure(exc):  # every graph would fail, after seconds of trying
                _unavailable.append(reason)
                warnings.warn(
                    "tw.compile on torch: torch.compile cannot build code here, so compiled "
                    f"steps replay without it in this process (slower, same results): {reason}."
                    " Install g++ (or set CXX)",
                    RuntimeWarning,
                    stacklevel=3,
                )
            elif reason not in _failed_graphs:
                _failed_graphs.add(reason)
                warnings.warn(
                    "tw.compile on torch: torch.compile failed on this graph, which replays "
                    f"without it (slower, same results): {reason}",
                    RuntimeWarning,
                    stacklevel=3,
                )
            self.chosen = self.plain
            return self.plain(*inputs)


def _toolchain_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it wraps) says inductor cannot compile C++ here."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen and len(seen) < 8:
        if type(exc).__name__ in ("InvalidCxxCompiler", "CppCompileError"):
            return True
        seen.append(exc)
        exc = getattr(exc, "inner_exception", None) or exc.__cause__ or exc.__context__
    return False
