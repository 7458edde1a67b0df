"""Building a replay function from one recorded step.

The graph is emitted as Python source, one line per recorded backend call
(``v7 = F2(v3, v5, C1)``), in the order the eager step made them: reading the step's
inputs from their locations first, then the calls that feed the core's own checks of
argument values (hoisted, so that the rest reads nothing back), then the other calls as
one function ``compute`` (a ``del`` of each value after its last use, so memory is freed
as early as eagerly, often earlier), then the write-backs (a parameter's new array, a new
``.grad``, new optimizer state) and the return value. Running it costs one Python call per
primitive and nothing else: no Tensor, autograd node, dtype promotion or argument check.
A call that gives its argument back bit for bit (``x * 1`` on a constant of ones, the
gradient a sum sends back; a reshape to the same shape) is an assignment instead, where
that cannot be seen: never a result of the graph (:func:`_settle_aliases`).
:attr:`Graph.source` shows it. ``compute`` is what a backend's ``compile_graph`` hook may
replace (:mod:`.record`).

Values are recognised by object identity: an array a recorded call returned, one a location
held when the step began (an input), or anything else (a constant, baked in). An array no
location explains is looked for among live tensors (a tensor the code reaches in a way the
roots do not show); found, it becomes an input read from that tensor.
"""

from __future__ import annotations

import gc
import re
import sys
from collections.abc import Iterator
from dataclasses import replace
from types import FunctionType
from typing import Any, Callable, NamedTuple, Optional

import numpy as np

from tensorweaver.autograd.node import INPLACE_CHANGES
from tensorweaver.compiler.draws import DRAWS, is_random
from tensorweaver.compiler.reads import TOKEN, Branch, ReadLog, uses
from tensorweaver.compiler.record import Call, GraphRecord
from tensorweaver.compiler.recorder import HOST_READS
from tensorweaver.compiler.released import alias, releaser, shape_of, view_again, with_grad
from tensorweaver.compiler.symbolic import Guards, Sym, read_once, take_uncounted
from tensorweaver.ops import elementwise
from tensorweaver.optim import scalar_arrays
from tensorweaver.optim.optimizer import as_float32
from tensorweaver.tensor import (
    _HOST_SHARED,
    _SHARED_STORAGES,
    _WRITES,
    Tensor,
    _count_write,
    _counter_root,
    _counts_apart,
    _private_copy,
    _storage_of,
    _writes_through,
)

_SCALARS = (bool, int, float, complex, str, type(None))
#: Global names of the generated source: constants, functions, holders and a rebuilt
#: view's marks (``W``: closures made afresh by each trace, alike where its calls are).
_GLOBAL_NAME = re.compile(r"\b[CFHW]\d+\b")
_VARIABLE = re.compile(r"\bv\d+\b")
#: Calls replayed even on constant arguments: random draws, writes, copies of host memory
#: (which may change between steps) and reads back to the host (checks).
_HOST_COPIES = frozenset({"from_host", "wrap_host", "from_dlpack"})
_NOT_FOLDABLE = frozenset({"seed", "write_into"}) | _HOST_COPIES | HOST_READS


class StaleGraph(Exception):
    """A value the core read back while tracing (an argument check) differs on replay."""


def _check(host: Any, traced: np.ndarray) -> None:
    if not (host.shape == traced.shape and np.array_equal(host, traced)):
        raise StaleGraph


def _check_region(host: Any, region: tuple) -> None:
    """A core check's ``(min, max)`` read: it decides as traced inside ``region``."""
    (least_min, greatest_min), (least_max, greatest_max) = region
    low, high = host.tolist()  # NaN compares false: stale
    if not (least_min <= low <= greatest_min and least_max <= high <= greatest_max):
        raise StaleGraph


def _rng_states(backends: tuple) -> list[bytes]:
    return [b.get_rng_state() for b in backends]


def _put_rng_states(backends: tuple, states: list[bytes]) -> None:
    for backend, state in zip(backends, states):
        backend.set_rng_state(state)


_MARKS = object()  # what a view's marks count as in Graph.same_as: alike


class Unsupported(Exception):
    """The step did something a replay cannot repeat (the reason is the message)."""


def _new(native: Any, backend: Any, dtype: Any, requires_grad: bool) -> Tensor:
    t = Tensor(native, backend, dtype)
    t._requires_grad = requires_grad
    return t


class _Line(NamedTuple):
    """One line of the replay: a call, an item of a call's tuple result, or a check."""

    targets: list[str]
    uses: set[str]
    text: str
    pure: bool  # may be dropped when its targets are not used
    kind: str  # the primitive called, "" for an item, "_check" for a check
    call: Optional[Call] = None
    backend: Any = None
    full: Optional[_Line] = None  # an alias's call (see GraphBuilder._unchanged)
    draws: bool = False  # a call that draws random numbers (with these arguments)


class Graph:
    """A replay function and the checks it needs beyond the signature."""

    def __init__(
        self,
        run: Callable,
        source: str,
        checks: list[tuple],
        record: GraphRecord | None = None,
        backend: Any = None,
        path: tuple = (),
    ) -> None:
        self.run = run
        self.source = source
        self.checks = checks  # (tensor, shape, dtype) for tensors found outside the roots
        self.record = record  # what a backend's compile_graph may compile (None: nothing)
        self.backend = backend
        self.path = path  # the outcome of each guard on a value read into Python

    def ready(self) -> bool:
        # (``not checks`` first: this runs before every replay, and most graphs have none)
        return not self.checks or all(t.shape == s and t.dtype is d for t, s, d in self.checks)

    def compile(self, mode: Optional[str]) -> None:
        """Let the backend's ``compile_graph`` hook replace the graph's ``compute``."""
        hook = getattr(self.backend, "compile_graph", None)
        if self.record is None or hook is None:
            return
        compiled = hook(replace(self.record, mode=mode))
        if compiled is not None:
            self.run.__globals__["compute"] = compiled
            self.run.__globals__["_donating"] = bool(getattr(compiled, "writes_donated", False))

    def same_as(self, other: Graph) -> bool:
        """Whether ``other`` does the same calls on the same constants and holders."""
        text, objects = self._canonical()
        other_text, other_objects = other._canonical()
        host = getattr(self.backend, "to_host", np.asarray)
        return text == other_text and all(
            _equal(a, b, host) for a, b in zip(objects, other_objects) if a is not _MARKS
        )

    def _canonical(self) -> tuple[str, list]:
        """The source with global names numbered by first use (a trace that found a
        constant in a cache binds fewer names), and the objects they stand for."""
        order: dict[str, str] = {}
        for name in _GLOBAL_NAME.findall(self.source):
            order.setdefault(name, f"{name[0]}_{len(order)}")
        text = _GLOBAL_NAME.sub(lambda m: order[m.group(0)], self.source)
        names = self.run.__globals__
        return text, [_MARKS if n[0] == "W" else names[n] for n in order]


def _equal(a: Any, b: Any, host: Callable[[Any], np.ndarray]) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) is FunctionType and hasattr(a, "same"):  # two graphs' releasers (released.py)
        return a.same == getattr(b, "same", None)
    if type(a) in (list, tuple):
        # (a foreach call's list of constant arrays: ``==`` of two lists compares the
        # arrays elementwise and has no truth value)
        return len(a) == len(b) and all(_equal(x, y, host) for x, y in zip(a, b))
    if hasattr(a, "shape") and hasattr(a, "dtype"):
        a, b = _on_host(a, host), _on_host(b, host)
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    try:
        return bool(a == b) or (a != a and b != b)
    except Exception:  # objects that do not compare: only the same one is equal
        return False


def _on_host(array: Any, host: Callable[[Any], np.ndarray]) -> np.ndarray:
    """``array``'s values in host memory (a native array in device memory has no
    ``__array__`` that works: the backend's ``to_host`` copies it)."""
    try:
        return np.asarray(array)
    except (TypeError, RuntimeError):
        return host(array)


class GraphBuilder:
    """Collects a step's locations before it runs, and turns its calls into a :class:`Graph`."""

    def __init__(self, locations: list[tuple[Any, str]], args: tuple, kwargs: dict) -> None:
        self.globals: dict[str, Any] = {
            "_new": _new,
            "Tensor": Tensor,
            "_check": _check,
            "_check_region": _check_region,
            "_rng_states": _rng_states,
            "_put_rng_states": _put_rng_states,
            "StaleGraph": StaleGraph,
            "Branch": Branch,
            "_draw": DRAWS.draw,
            "_with_grad": with_grad,
            "_alias": alias,
            "_view_again": view_again,
            "_refs": sys.getrefcount,
            "_scalar": scalar_arrays.get,
            "_put_scalar": scalar_arrays.put,
            "_scalar_array": scalar_arrays.array_of,
            "_float32": as_float32,
            "_private": _private,
            "_numpy_shared": _numpy_shared,
            "_donating": False,
        }
        self.guards = Guards()  # comparisons of lifted numbers (symbolic.py)
        self.reads = ReadLog()  # the user's reads of tensor values (the recorder's)
        self.regions: dict[int, Any] = {}  # the recorder's: checks decided by a region
        self.path: list[Any] = []  # the outcome of each guard on a read, in order
        self._bound: dict[int, str] = {}
        self.names: dict[int, str] = {}  # id(value) -> the variable holding it
        self.sources: dict[int, str] = {}  # id(input array) -> the expression reading it
        # id(array) -> the other locations that hold it too, where it is one of the arrays
        # the optimizers' step counts share (optim/scalar_arrays.py): each a guard once the
        # graph reads that array (from the first location).
        self._sharers: dict[int, list[str]] = {}
        self._inputs: dict[int, str] = {}  # id(input array) -> the variable it is read into
        self._input_arrays: dict[str, Any] = {}  # the variable an input is read into -> it
        self._written: list[Any] = []  # the arrays of :meth:`written`
        self.prelude: list[str] = []
        self.lines: list[_Line] = []
        self._numbers: dict[str, str] = {}  # a recomputed number's expression -> its variable
        self.meta: dict[str, tuple] = {}  # variable -> (shape, native dtype) as traced
        self.methods: dict[str, str] = {}  # global name -> the backend method it calls
        self.checks: list[tuple] = []
        self._vars = 0
        self._uses: set[str] = set()
        self.watched: list[tuple[str, Callable, Any, Any, Any]] = []
        self.rebound: set[str] = set()  # the locations the step rebinds (write_backs)
        # Module attributes the step rebinds to a tensor whose autograd graph is still whole
        # after it, with that tensor (write_backs; only a differentiable graph serves them).
        self.stored: list[tuple[str, Tensor]] = []
        # In-place changes (write_backs): (location, variable of the new array, id of the
        # array the location held), which a compiler may write into that array (donated).
        self._takes: list[tuple[str, str, int]] = []
        # The version of the tensor each watched location held before the step (a change
        # that left it alone was made through ``.data``: written back uncounted).
        self._versions: dict[str, int] = {}
        self._settled: set[int] = set()  # the ids of the tensors :meth:`settle` was given
        # Results: id(tensor a location held before and after the step) -> that location;
        # the ids of the tensors locations hold after it, of returned tensors; the tensors
        # rebuilt (id -> variable) by the lines ``finish``.
        self._located: dict[int, str] = {}
        self._held: set[int] = set()
        self._returning: set[int] = set()
        self._rebuilt_names: dict[int, str] = {}
        # id(tensor the caller does not reach) -> id(rebuilt result that views or aliases
        # it) -> that result's bytes (_bytes_of)
        self._roots: dict[int, dict[int, tuple | None]] = {}
        self.finish: list[str] = []
        # A backward graph's builder: the forward's builder, whose values it takes from
        # ``args[0]`` (``saved``, in order) as the forward returns them.
        self.outer: GraphBuilder | None = None
        self.saved: list[Any] = []
        for holder, suffix in locations:
            self._watch(holder, suffix, args, kwargs)
        self._epoch = INPLACE_CHANGES[0]  # (the in-place changes made before the step)

    # -- naming -------------------------------------------------------------------------

    def bind(self, obj: Any, prefix: str = "C") -> str:
        """A global name for ``obj`` in the generated code."""
        name = self._bound.get(id(obj))
        if name is None:
            name = self._bound[id(obj)] = f"{prefix}{len(self._bound)}"
            self.globals[name] = obj
        return name

    def recomputed(self) -> list[str]:
        """The expressions of the lifted numbers (symbolic.py) that calls take."""
        return list(self._numbers)

    def _var(self) -> str:
        self._vars += 1
        return f"v{self._vars}"

    def _watch(self, holder: Any, suffix: str, args: tuple, kwargs: dict) -> None:
        expr = suffix if holder is None else self.bind(holder, "H") + suffix
        getter = eval(f"lambda args, kwargs: {expr}", self.globals)  # noqa: S307 (our text)
        value = getter(args, kwargs)
        native = value.native if isinstance(value, Tensor) else value
        if isinstance(value, Tensor):
            first = self.sources.setdefault(id(native), f"{expr}.native")
            if first != f"{expr}.native" and scalar_arrays.value_of(native) is not None:
                self._sharers.setdefault(id(native), []).append(f"{expr}.native")
        elif value is not None:
            self.sources.setdefault(id(native), expr)
        dtype = value.dtype if isinstance(value, Tensor) else None
        if isinstance(value, Tensor):
            self._versions[expr] = value._version
        self.watched.append((expr, getter, value, native, dtype))

    # -- values -------------------------------------------------------------------------

    def value(self, obj: Any) -> str:
        """The expression for ``obj`` as an argument of a call."""
        if isinstance(obj, Sym) and obj.live():
            if uses(obj.expr):
                raise Unsupported(
                    "a value it reads into Python at "
                    f"{self.reads.line(uses(obj.expr))} (.item(), .tolist()) flows back "
                    "into a tensor operation, which a replay cannot repeat"
                )
            name = self._numbers.get(obj.expr)
            if name is None:
                name = self._numbers[obj.expr] = self._var()
                self.prelude.append(f"{name} = ({obj.expr})")
            self._uses.add(name)
            return name
        key = id(obj)
        name = self.names.get(key)
        if name is None and key not in self.sources and self.outer and self.outer.knows(key):
            self.sources[key] = f"args[0][{len(self.saved)}]"
            self.saved.append(obj)
        if name is None and key in self.sources:
            name = self.names[key] = self._inputs[key] = self._var()
            self._input_arrays[name] = obj
            self.prelude.append(f"{name} = {self.sources[key]}")
            # (read from the first location: the others must still hold the same array)
            self.guards += [
                (f"({o} is {self.sources[key]})", True) for o in self._sharers.get(key, ())
            ]
            self._describe(name, obj)
        if name is not None:
            self._uses.add(name)
            return name
        if type(obj) in (tuple, list):
            parts = [self.value(v) for v in obj]
            if all(p.startswith("C") for p in parts):
                return self.bind(obj)
            return tuple_source(parts) if type(obj) is tuple else f"[{', '.join(parts)}]"
        if type(obj) is dict:
            parts = {k: self.value(v) for k, v in obj.items()}
            if all(p.startswith("C") for p in parts.values()):
                return self.bind(obj)
            return "{" + ", ".join(f"{self.bind(k)}: {p}" for k, p in parts.items()) + "}"
        return self.bind(obj)

    def knows(self, key: int) -> bool:
        """Whether the object with id ``key`` is a value of this graph (not a constant)."""
        return key in self.names or key in self.sources

    def find_holders(self, calls: list[tuple]) -> None:
        """Make inputs of the arrays ``calls`` take that neither a call made nor a location
        held but a live tensor holds (one search of the heap); the rest are constants.

        An array of one or more axes that no tensor holds any more, taken by a call other
        than a copy from the host, was most likely a tensor's before the step rebound it
        (a parameter of a module the roots do not reach): baking it in would be wrong.
        """
        made: set[int] = set()
        unknown: dict[int, bool] = {}  # id -> whether a rebound tensor's array is suspected
        for _, name, args, kwargs, result in calls:
            for obj in leaves((args, kwargs)):
                key = id(obj)
                if key in made or key in self.sources or not hasattr(obj, "shape"):
                    continue
                if self.outer is None or not (self.outer.knows(key) or key in self.outer._bound):
                    suspect = name not in _HOST_COPIES and len(obj.shape) > 0
                    unknown[key] = unknown.get(key, False) or suspect
            made.update(id(obj) for obj in leaves(result))
        if unknown:
            # A cached scalar operand (``x / 4``) is a constant, though a returned result's
            # autograd node may keep a tensor around it alive: no holder to read it from.
            for native in elementwise.cached_scalars():
                unknown.pop(id(native), None)
        if not unknown:
            return
        self._hold(gc.get_objects(), unknown)
        if unknown and gc.get_freeze_count():
            for objects in _frozen_objects():
                self._hold(objects, unknown)
                if not unknown:
                    break
        if any(unknown.values()):
            raise Unsupported(
                "it uses a tensor reached through an object tw.compile does not follow, and "
                "rebinds it (a parameter of a module held in an attribute of an object that "
                "is not an argument, say); pass that object, module or optimizer as an "
                "argument or name it in the function"
            )

    def _hold(self, objects: list[Any], unknown: dict[int, bool]) -> None:
        """Make inputs of the arrays in ``unknown`` that a tensor among ``objects`` holds
        (taken out of ``unknown``)."""
        for obj in objects:
            # type(), not isinstance: some objects' __class__ is a property with effects
            if issubclass(type(obj), Tensor) and id(obj.native) in unknown:
                del unknown[id(obj.native)]
                self.checks.append((obj, obj.shape, obj.dtype))
                self._watch(obj, "", (), {})

    def _describe(self, name: str, obj: Any) -> None:
        if hasattr(obj, "shape") and hasattr(obj, "dtype"):
            self.meta[name] = (tuple(obj.shape), obj.dtype)

    def _produced(self, result: Any, name: str) -> None:
        if type(result) in _SCALARS:
            return
        self.names[id(result)] = name
        self._describe(name, result)
        if type(result) in (tuple, list):
            for i, item in enumerate(result):
                if type(item) not in _SCALARS:
                    sub = self._var()
                    self.lines.append(_Line([sub], {name}, f"{sub} = {name}[{i}]", True, ""))
                    self._produced(item, sub)

    # -- building -----------------------------------------------------------------------

    def call(self, backend: Any, name: str, args: tuple, kwargs: dict, result: Any) -> None:
        self._uses = set()
        values = [self.value(a) for a in args] + [self.value(v) for v in kwargs.values()]
        if values and all(v.startswith("C") for v in values) and _foldable(name, args):
            return  # computed from constants only: its result is a constant too
        parts = values[: len(args)] + [f"{k}={v}" for k, v in zip(kwargs, values[len(args) :])]
        fn = self.bind(getattr(backend, name), "F")
        self.methods[fn] = name
        target = self._var()
        text = f"{target} = {fn}({', '.join(parts)})"
        draws = is_random(name, args)
        if self.reads.guards and draws:
            # A replay a guard may stop: keep its draws to hand them to the next run.
            text = f"{target} = _draw({', '.join([fn, *parts])})"
        call = Call(name, tuple(parts), target)
        # The user's read is dropped when nothing uses its value (a read for logging).
        read = any(result is a for a in self.reads.arrays)
        line = _Line([target], self._uses, text, read, name, call, backend, draws=draws)
        same = None if read else _unchanged(name, args, values, result)
        if same is not None:
            line = _Line([target], {same}, f"{target} = {same}", True, "=", None, backend, line)
        self.lines.append(line)
        self._produced(result, target)
        if name in HOST_READS and not read:
            # The core's own check read values: the replay holds only while they repeat, or
            # stay in the region where the check decides as it did.
            region = self.regions.get(id(result))
            if region is not None:
                check = f"_check_region({target}, {self.bind(region)})"
            else:
                check = f"_check({target}, {self.bind(np.array(result, copy=True))})"
            self.lines.append(_Line([], {target}, check, False, "_check"))

    def guard(self, expr: str, outcome: Any) -> None:
        """Stop the replay here (:class:`Branch`) unless ``expr`` on the values read so far
        gives ``outcome`` (a bool, or an int read) again."""
        if any(line.kind == "write_into" for line in self.lines):
            raise Unsupported(
                "it writes into memory it shares with NumPy before it branches on a value "
                "read into Python, and a replay that takes the other branch would write twice"
            )
        text = self.read_values(expr)
        index = len(self.path)
        self.path.append(outcome)
        check = f"if {text} != {outcome!r}: raise Branch({index}, {text})"
        self.lines.append(_Line([], set(_VARIABLE.findall(text)), check, False, "_guard"))

    def read_values(self, expr: str) -> str:
        """``expr`` with each read's token replaced by the variable holding its array."""
        return TOKEN.sub(lambda m: self.names[id(self.reads.arrays[int(m.group(1))])], expr)

    def tensor(self, t: Tensor, requires_grad: bool = False) -> str:
        native, backend, dtype = self.value(t.native), self.bind(t.backend), self.bind(t.dtype)
        if requires_grad:
            return f"_new({native}, {backend}, {dtype}, True)"
        return f"Tensor({native}, {backend}, {dtype})"

    def result(self, value: Any, graphs: bool = False) -> str:
        """The expression that rebuilds the step's return value; with ``graphs``, each tensor
        as the eager step leaves it (:meth:`returned`)."""
        if isinstance(value, Tensor) and graphs:
            for expr, _, before, _, _ in self.watched:
                if before is value and expr in self.rebound and id(value) not in self._held:
                    if value.requires_grad:
                        raise Unsupported(f"it returns the tensor it replaced at {expr}")
            return self.returned(value)
        if isinstance(value, Tensor):
            return self.tensor(value)
        if type(value) in (tuple, list):
            parts = [self.result(v, graphs) for v in value]
            return tuple_source(parts) if type(value) is tuple else f"[{', '.join(parts)}]"
        if type(value) is dict:
            items = (f"{self.bind(k)}: {self.result(v, graphs)}" for k, v in value.items())
            return "{" + ", ".join(items) + "}"
        if type(value) in _SCALARS:
            return self.bind(value)
        if isinstance(value, Sym) and not value.live():
            return self.bind(float.__float__(value))  # a number an earlier trace read
        if isinstance(value, Sym) and uses(value.expr):
            return self.read_values(value.expr)  # a number read from a tensor, read again
        if isinstance(value, Sym):
            return self.value(value)  # an optimizer's number, as the replay recomputes it
        raise Unsupported(
            f"it returned a {type(value).__name__}; a compiled step may return tensors, "
            "Python numbers and tuples, lists or dicts of them"
        )

    def returns(self, value: Any) -> None:
        """Note the tensors the step returns (a ``detach()`` of one is its alias again)."""
        self._returning.update(id(t) for t in leaves(value) if isinstance(t, Tensor))

    def returned(self, t: Tensor) -> str:
        """A variable holding ``t`` as the replay leaves it: the tensor at a watched
        location that holds it after the step (the same object, as eagerly), else one
        built once per replay (:meth:`_rebuilt`), so a tensor returned twice is one."""
        name = self._located.get(id(t)) or self._rebuilt_names.get(id(t))
        if name is None:
            text = self._rebuilt(t)
            name = self._rebuilt_names[id(t)] = f"r{len(self._rebuilt_names)}"
            self.finish.append(f"{name} = {text}")
        return name

    def _rebuilt(self, t: Tensor) -> str:
        """The expression for ``t`` with the autograd face it has after the step: a result of
        a graph the step's backward freed (:mod:`.released`, ``retain_grad()`` kept), a leaf
        that requires grad, an alias of a tensor the caller reaches, a view of a tensor it
        does not (:meth:`_view_again`), with its ``.grad``."""
        self._own_memory(t)
        if t._node is not None:
            leaves: list[Tensor] = []
            shape = shape_of(t._node, leaves)
            if shape is None:
                raise Unsupported(
                    "it returns (or stores) a tensor whose autograd graph is still whole after "
                    "the step "
                    "(a backward with retain_graph=True, or none through it), and a replay "
                    "cannot repeat a later backward through it; return it .detach()ed"
                )
            # (a leaf the caller cannot reach is a new one: only its grad_fn shows it)
            found = (
                self.returned(v) if self._reachable(v) else self.tensor(v, True) for v in leaves
            )
            kept = t._node.retained is not None and t._node.retained() is t
            release = self.bind(releaser(shape, kept))
            text = f"{release}({self.tensor(t)}, ({''.join(f'{v}, ' for v in found)}))"
        else:
            text = self._alias(t) or self._view_again(t) or self.tensor(t, t.requires_grad)
        if t._grad is None:
            return text
        if t._grad._node is not None:
            raise Unsupported("it returns a tensor whose .grad has a graph (create_graph=True)")
        return f"_with_grad({text}, {self.returned(t._grad)})"

    def _alias(self, t: Tensor) -> str | None:
        """``t`` as a ``detach()`` of a tensor the caller reaches, or None for a tensor no
        write through which reaches one (a view's write-back is not rebuilt)."""
        if t._view_of is not None and self._reachable(t._view_of[0]):
            raise Unsupported(
                "it returns (or stores) a view of a tensor it returns or leaves at a location "
                "(a parameter, an argument), and a replay does not rebuild a write through it"
            )
        base = t._alias_of
        if base is None or not self._reachable(base):
            return None
        if not (id(base) in self._held or id(base) in self._returning):
            raise Unsupported("it returns an alias of an alias or view of a tensor it returns")
        native = self.value(t.native)
        return f"_alias({self.returned(base)}, {native}, {t.requires_grad})"

    def _view_again(self, t: Tensor) -> str | None:
        """``t`` as a view of its base, rebuilt once per replay (:meth:`_hidden`), where the
        caller reaches neither and neither has a history (``chunk()``'s pieces of a hidden
        result: one version counter and ``_base``, as eagerly); else None."""
        if t._view_of is None or t._node is not None:
            return None
        base = self._hidden(t._view_of[0])
        if base is None:
            return None
        marks = self.bind(t._view_of[1:], "W")
        return f"_view_again({self.tensor(t)}, {base}, {marks})"

    def _hidden(self, t: Tensor) -> str | None:
        """A variable holding ``t``, a tensor the caller does not reach and no history
        holds, rebuilt once per replay (a view of its own hidden base in turn); None for
        one with a history or a ``detach()`` of another."""
        name = self._rebuilt_names.get(id(t))
        if name is not None:
            return name
        if t._node is not None or t._alias_of is not None or t._grad is not None:
            return None
        text = self._view_again(t) or self.tensor(t, t.requires_grad)
        name = self._rebuilt_names[id(t)] = f"r{len(self._rebuilt_names)}"
        self.finish.append(f"{name} = {text}")
        return name

    def _own_memory(self, t: Tensor) -> None:
        """Refuse ``t`` where its rebuilt form, a tensor of its own, would not behave as it
        does eagerly: a view or alias of a tensor the caller does not reach whose memory
        another such result meets (a write through one would not reach the other; apart, as
        ``chunk()``'s pieces, neither sees the other's writes), or a view that holds one
        memory location twice (an ``expand()``: PyTorch refuses writes into it)."""
        root = t
        while root._view_of is not None or root._alias_of is not None:
            root = root._alias_of if root._view_of is None else root._view_of[0]
            if id(root) in self._held or id(root) in self._returning:
                return  # (a view or alias of a tensor the caller reaches: _alias)
        if root is t:
            return
        if t._view_of is not None and t._overlaps_itself():
            raise Unsupported(
                "it returns (or stores) an expand() of a tensor it does not return, and a "
                "replay rebuilds it as a tensor of its own, which would accept in-place writes"
            )
        others = self._roots.setdefault(id(root), {})
        if id(t) in others:
            return
        spans = _bytes_of(t)
        if any(_memory_meets(spans, other) for other in others.values()):
            raise Unsupported(
                "it returns (or stores) two views or aliases of one tensor it does not return "
                "that share memory, and a replay rebuilds each as a tensor of its own: a write "
                "through one would not reach the other"
            )
        others[id(t)] = spans

    def _reachable(self, t: Tensor) -> bool:
        """Whether the caller reaches ``t`` after the step, or a write into it reaches one."""
        if id(t) in self._held or id(t) in self._returning:
            return True
        base = t._alias_of if t._view_of is None else t._view_of[0]
        return base is not None and self._reachable(base)

    def settle(self, tensor: Tensor) -> None:
        """Take ``tensor``'s storage as it is now for the one it held before the step: the
        step's change to it is one the tail redoes itself (a scalar that symbolic.py
        lifted), not a value of the graph to write back."""
        self.watched = [
            (expr, getter, before, tensor.native if before is tensor else native, dtype)
            for expr, getter, before, native, dtype in self.watched
        ]
        self._settled.add(id(tensor))

    def written(self, array: Any, expr: str) -> None:
        """Read ``array``, which the step wrote into an optimizer's scalar tensor, by
        ``expr`` (kept alive with the builder: the graph knows it by its id)."""
        self.sources[id(array)] = expr
        self._written.append(array)

    def write_backs(self, args: tuple, kwargs: dict) -> list[str]:
        """Assignments that leave every location as the traced step left it (a tensor that
        several locations hold is one object, as eagerly)."""
        nows = [_now(getter, args, kwargs) for _, getter, _, _, _ in self.watched]
        for (expr, _, before, _, _), now in zip(self.watched, nows):
            if now is not before:
                self.rebound.add(expr)
            if isinstance(now, Tensor):
                self._held.add(id(now))
                if now is before:  # the object the location held: read it there
                    self._located.setdefault(id(now), expr)
        # The tensors changed in place, each with the in-place writes the step counted on it
        writes = {
            id(now): now._version - self._versions[expr]
            for (expr, _, before, native, _), now in zip(self.watched, nows)
            if now is before
            and isinstance(now, Tensor)
            and id(now) not in self._settled
            and (now.native is not native or now._version != self._versions[expr])
        }
        out = self.finish  # what a rebuilt tensor needs first (its .grad) goes before it
        if INPLACE_CHANGES[0] != self._epoch:
            # (as eagerly: a node recorded before the step checks its inputs' versions in
            # backward, which it skips while nothing has changed in place since it was made)
            out.append(f"{self.bind(INPLACE_CHANGES)}[0] += 1")
        done: set[int] = set()  # (a tensor two locations hold is written back once)
        for (expr, _, before, native, dtype), now in zip(self.watched, nows):
            if now is before and not isinstance(now, Tensor):
                continue
            if id(now) in writes:
                if id(now) in done or _changed_with(now, writes):
                    continue  # (else its base's write-back refreshes it, moves its version)
                done.add(id(now))
            if now is _GONE:  # a module's attribute the step deleted
                out.append(f"del {expr}")
            elif now is None:
                out.append(f"{expr} = None")
            elif now is before:
                if now.native is not native:
                    if now.shape != native.shape or now.dtype is not dtype:
                        raise Unsupported(f"it changed the shape or dtype of {expr}")
                    # As an in-place change eagerly: a new version, written into memory
                    # shared with NumPy, passed on to the tensor's views and aliases.
                    new = self.value(now.native)
                    self._takes.append((expr, new, id(native)))
                    if writes[id(now)] == 0:  # (through ``.data``)
                        out.append(f"{self.bind(take_uncounted)}({expr}, {new})")
                    else:
                        out.append(f"{expr}._take({new})")
                    if writes[id(now)] > 1:  # (its first write is the _take's)
                        out.append(f"{self.bind(_count_writes)}({expr}, {writes[id(now)] - 1})")
                elif id(now) in writes:
                    # Its writes went into its memory (shared with NumPy: the graph's
                    # write_into calls), which moved no version
                    out.append(f"{self.bind(_count_writes)}({expr}, {writes[id(now)]})")
            elif isinstance(now, Tensor):
                kept = _kept(now) and self._reachable(now._alias_of)
                if expr.endswith("]") and _in_module(expr) and (kept or _whole(now)):
                    # A module attribute or buffer rebound to a tensor of the forward's
                    # autograd graph (pruning's weight), or to a detach() of one: an output
                    # of the replayed Function or its alias (:mod:`.differentiable`), or
                    # Unsupported (compiled.py).
                    self.stored.append((expr, now))
                    continue
                out.append(f"{expr} = {self.returned(now)}")
            else:
                raise Unsupported(f"it replaced {expr} with a {type(now).__name__}")
        self.finish = []
        return out

    def build(self, tail: list[str], returned: str) -> Graph:
        """The graph: the recorded calls, then ``tail`` (write-backs), returning ``returned``
        (after the tensors :meth:`returned` rebuilt)."""
        tail, self.finish = tail + self.finish, []
        end = set(_VARIABLE.findall("\n".join(tail + [returned])))
        kept: list[_Line] = []
        live = set(end)
        for line in reversed(self.lines):
            if line.pure and not live.intersection(line.targets):
                continue
            kept.append(line)
            live.update(line.uses)
        hoisted, body = _hoist_checks(_settle_aliases(kept[::-1], end), self._input_arrays)
        streams = self._streams_before_checks(body)
        made = {t for line in body for t in line.targets}
        inputs = _ordered({u for line in body for u in line.uses} - made)
        outputs = _ordered(end & made)
        results = "".join(f"{o}, " for o in outputs)
        compute = _with_dels(body, set(outputs)) + [f"return ({results})"]
        compute_source = f"def compute({', '.join(inputs)}):\n" + _indent(compute)
        donated = self._donated(body, inputs, outputs, "\n".join(tail + [returned]))
        call = [f"{results}= " * bool(outputs) + f"compute({', '.join(inputs)})"]
        if streams:
            # A check in ``compute`` that stops the replay after a draw: the generators go
            # back to where they were, so the trace (or eager run) that follows draws as
            # the eager step did.
            name = self.bind(streams)
            call = [
                f"_states = _rng_states({name})",
                "try:",
                f"    {call[0]}",
                "except StaleGraph:",
                f"    _put_rng_states({name}, _states)",
                "    raise",
            ]
        call = [line for _, old, expr in donated for line in _kept_apart(old, expr)] + call
        checks = [f"if {expr} is not {result}: raise StaleGraph" for expr, result in self.guards]
        lines = read_once(
            checks
            + self.prelude
            + _with_dels(hoisted, set(inputs) | end)
            + (call if body else [])
            + tail
            + [f"return {returned}"]
        )
        source = "def replay(args, kwargs):\n" + _indent(lines)
        if body:
            source += compute_source
        exec(compile(source, "<tw.compile replay>", "exec"), self.globals)  # noqa: S102
        return Graph(
            self.globals["replay"],
            source,
            self.checks,
            *self._record(body, inputs, outputs, compute_source, donated),
            path=tuple(self.path),
        )

    def _streams_before_checks(self, body: list[_Line]) -> tuple:
        """The backends whose generators ``body`` draws from before its last check of a
        read-back value (a check not hoisted: it needs a draw, or follows a write), whose
        states a stopped replay puts back. A write into memory shared with NumPy before
        such a check cannot be taken back: Unsupported."""
        checks = [i for i, line in enumerate(body) if line.kind == "_check"]
        before = body[: checks[-1]] if checks else []
        if any(line.kind == "write_into" for line in before):
            raise Unsupported(
                "it writes into memory it shares with NumPy before the core checks values it "
                "read back (index bounds, class targets), and a replay that such a check stops "
                "would write twice"
            )
        found = {id(line.backend): line.backend for line in before if line.draws}
        return tuple(b for b in found.values() if getattr(b, "set_rng_state", None))

    def _donated(
        self, body: list[_Line], inputs: list[str], outputs: list[str], tail: str
    ) -> list[tuple[str, str, str]]:
        """``(new, old, location)`` for each in-place change whose new array ``new`` a
        compiler may write into the array ``old`` the location held (:attr:`GraphRecord.
        donated`): ``old`` is an input of ``compute`` that nothing after it reads, and
        ``new`` an output read only by the location's write-back. None where no compiler
        is offered the graph."""
        found: list[tuple[str, str, str]] = []
        if _backend_of(body) is None:
            return found
        for expr, new, key in self._takes:
            old = self._inputs.get(key)
            if (
                old in inputs
                and new in outputs
                and old in self.meta
                and not re.search(rf"\b{old}\b", tail)
                and len(re.findall(rf"\b{new}\b", tail)) == 1
                and all(old != o for _, o, _ in found)
            ):
                found.append((new, old, expr))
        return found

    def _record(
        self,
        body: list[_Line],
        inputs: list[str],
        outputs: list[str],
        source: str,
        donated: list[tuple[str, str, str]],
    ) -> tuple[GraphRecord | None, Any]:
        """What a backend's compile_graph gets, and that backend: None for a graph that
        reads values back to the host or uses several backends."""
        backend = _backend_of(body)
        if backend is None:
            return None, None
        names = set(_VARIABLE.findall(source))
        constants = {n: self.globals[n] for n in sorted(set(re.findall(r"\bC\d+\b", source)))}
        record = GraphRecord(
            fn=self.globals["compute"],
            inputs=tuple(inputs),
            outputs=tuple(outputs),
            calls=tuple(line.call for line in body if line.call),
            constants=constants,
            values={n: m for n, m in self.meta.items() if n in names},
            source=source,
            methods={n: m for n, m in self.methods.items() if re.search(rf"\b{n}\(", source)},
            donated=tuple((new, old) for new, old, _ in donated),
        )
        return record, backend


_READS = HOST_READS | {"_check"}


def _frozen_objects() -> Iterator[list[Any]]:
    """The live objects ``gc.freeze()`` took out of the collector's lists (which
    ``gc.get_objects()`` reads), in batches: those the listed objects, the modules and the
    running frames reach, found by following references (a breadth-first walk)."""
    listed = gc.get_objects()
    seen = set(map(id, listed))
    batch = [*listed, sys.modules, *sys._current_frames().values()]
    del listed
    tracked = gc.is_tracked  # (an untracked object holds no tensor)
    while batch:
        found = {id(o): o for o in gc.get_referents(*batch) if tracked(o)}
        fresh = found.keys() - seen
        seen |= fresh
        batch = [found[k] for k in fresh]
        yield batch


def _backend_of(body: list[_Line]) -> Any:
    """The backend whose ``compile_graph`` may compile ``body``: its calls' one backend,
    where none reads values back to the host; else None."""
    backends = {id(line.backend): line.backend for line in body if line.call}
    if len(backends) != 1 or any(line.kind in _READS for line in body):
        return None
    return next(iter(backends.values()))


def _kept_apart(old: str, expr: str) -> list[str]:
    """Replay lines that give ``compute`` a private copy of the array ``old`` that the
    location ``expr`` holds where anything else holds it too (a ``clone()`` of the tensor
    shares its array until either changes; an alias of it) or its memory is shared with
    NumPy (whose in-place writes the core makes and counts itself): a compiler may write
    into ``old`` (:attr:`GraphRecord.donated`), which only the location may see.
    References: the location's, ``old``'s own and the count's argument. Only where the
    compiled form says it writes into such inputs (``_donating``, :meth:`Graph.compile`)."""
    check = f"_donating and (_refs({old}) > 3 or _numpy_shared({expr}))"
    return [f"if {check}:", f"    {old} = _private({expr})"]


def _numpy_shared(t: Tensor) -> bool:
    """Whether ``t``'s memory is shared with NumPy (or was: its writes are counted)."""
    if not (_HOST_SHARED or _SHARED_STORAGES or _WRITES):
        return False  # (the usual case)
    if _writes_through(t) or t._is_shared_view():
        return True
    owner = _storage_of(t.backend, t.native)
    return owner is not None and (id(owner) in _SHARED_STORAGES or id(owner) in _WRITES)


def _private(t: Tensor) -> Any:
    """A copy of ``t``'s array that shares memory with nothing."""
    return _private_copy(t.backend, t.native, t.dtype)


def _bytes_of(t: Tensor) -> tuple | None:
    """(first byte, end, shape, strides in bytes, the backend's storage) of ``t``'s elements,
    each element's bytes a last axis; None where the backend tells no storage (addresses
    that compare); () where it has no element."""
    if not t.numel():
        return ()
    storage = getattr(t.backend, "storage", None)
    storage = None if storage is None else storage(t.native)
    if storage is None:
        return None
    size, start = t.element_size(), t.data_ptr()
    strides = tuple(s * size for s in t.stride())
    end = start + sum((n - 1) * s for n, s in zip(t.shape, strides)) + size
    return start, end, t.shape + (size,), strides + (1,), storage


def _memory_meets(a: tuple | None, b: tuple | None) -> bool:
    """Whether two tensors' bytes (:func:`_bytes_of`) of one memory meet (True where that
    cannot be told: no storage, or two, as a view whose array is a copy has): NumPy's exact
    solver over stand-in byte arrays, a bounded search (too hard: True)."""
    if a == () or b == ():
        return False
    if a is None or b is None or a[4] is not b[4]:
        return True
    if a[1] <= b[0] or b[1] <= a[0]:
        return False  # (apart as ranges, told cheaply: rows, unbind(0))
    low = min(a[0], b[0])
    # (np.empty maps the stand-in memory without touching it; the solver reads no element)
    memory = np.empty(max(a[1], b[1]) - low, np.uint8)
    a_bytes, b_bytes = (
        np.ndarray(shape, np.uint8, memory, start - low, strides)
        for start, _, shape, strides, _ in (a, b)
    )
    try:
        return bool(np.shares_memory(a_bytes, b_bytes, max_work=1 << 16))
    except np.exceptions.TooHardError:
        return True


def _hoist_checks(lines: list[_Line], inputs: dict[str, Any]) -> tuple[list[_Line], list[_Line]]:
    """``lines`` split into the checks of read-back values with the calls they need, which
    run first, and the rest; nothing is hoisted past a seed, nor past a write into memory
    that the hoisted calls read (``inputs``: the graph's input variables -> their arrays as
    traced), and no draw is hoisted. So a replay that a check stops has drawn and written
    nothing: the trace that follows draws as the eager step does (a check after a dropout
    mask drew the mask twice), and writes once."""
    needed: set[str] = set()
    hoisted: list[_Line] = []
    for line in reversed(lines):
        if line.kind == "_check" or needed.intersection(line.targets):
            hoisted.append(line)
            needed.update(line.uses)
    if not hoisted:
        return [], lines
    # (A recurrent kernel draws only with dropout between its layers: ``line.draws`` knows.)
    if any(line.kind in _NOT_FOLDABLE - _READS - _HOST_COPIES - {"write_into"} for line in lines):
        return [], lines
    if any(line.draws or line.kind == "write_into" for line in hoisted):
        return [], lines
    if any(line.kind == "write_into" for line in lines) and not _apart(lines, needed, inputs):
        return [], lines
    chosen = {id(line) for line in hoisted}
    return hoisted[::-1], [line for line in lines if id(line) not in chosen]


def _apart(lines: list[_Line], read: set[str], inputs: dict[str, Any]) -> bool:
    """Whether no ``write_into`` line of ``lines`` writes into the memory of an input that
    the variables ``read`` name: each write's target is taken to be in the memory of every
    input it was computed from (``contiguous`` of an input is that input), and storages
    are the writing backend's."""
    made = {t: line for line in lines for t in line.targets}
    for line in lines:
        if line.kind != "write_into":
            continue
        sources = _inputs_of(line.call.args[0] if line.call else "", made, inputs)
        if not sources:
            return False  # (memory the graph cannot name: taken as shared)
        owners = [line.backend.storage(inputs[name]) for name in sources]
        for name in read:
            array = inputs.get(name)
            if array is None:
                continue  # (made by a hoisted call: new memory)
            kinds = {type(inputs[source]) for source in sources}
            if kinds != {type(array)} or any(line.backend.storage(array) is o for o in owners):
                return False
    return True


def _inputs_of(name: str, made: dict[str, _Line], inputs: dict[str, Any]) -> set[str]:
    """The input variables ``name`` was computed from (itself, if it is one)."""
    found, todo, seen = set(), [name], set()
    while todo:
        var = todo.pop()
        if var in seen:
            continue
        seen.add(var)
        if var in inputs:
            found.add(var)
        elif var in made:
            todo.extend(made[var].uses)
    return found


def _unchanged(name: str, args: tuple, values: list[str], result: Any) -> str | None:
    """The variable a call gives back unchanged, bit for bit, or None: ``x * 1`` where
    the ones (a constant of a real dtype) neither broadcast ``x`` nor change its dtype, a
    reshape or expand to ``x``'s own shape. (``x * 1`` is ``x`` in IEEE arithmetic, but
    for a signalling NaN, which it quiets; no arithmetic makes one.)"""
    if name == "mul" and len(args) == 2:
        pairs = ((*args, *values[:2]), (*args[::-1], *values[1::-1]))
        for x, ones, var, const in pairs:
            if var[0] == "v" and const[0] == "C" and _same_array_type(x, result):
                try:
                    host = np.asarray(ones)
                except Exception:  # a device array: not worth a copy to the host
                    continue
                # (the native dtypes compared: a NumPy dtype never equals torch's)
                same = getattr(ones, "dtype", None) == result.dtype
                if same and host.dtype.kind in "biuf" and (host == 1).all():
                    return var
    if name in ("reshape", "expand") and values[0][0] == "v":
        return values[0] if _same_array_type(args[0], result) else None
    return None


def _same_array_type(x: Any, result: Any) -> bool:
    return (
        hasattr(x, "shape")
        and hasattr(x, "dtype")
        and tuple(x.shape) == tuple(result.shape)
        and x.dtype == result.dtype
    )


#: Primitives whose result is a new array on every backend, never an input or a view of one
#: (and every ``foreach_*`` primitive, whose results are new arrays by the contract).
_NEW_ARRAY = frozenset({"add", "sub", "mul", "div", "matmul"})


def _makes_new_arrays(kind: str) -> bool:
    return kind in _NEW_ARRAY or kind.startswith("foreach_")


def _settle_aliases(lines: list[_Line], end: set[str]) -> list[_Line]:
    """``lines`` with each alias of :func:`_unchanged` kept only where nothing can tell:
    its value is neither a result of the graph nor used but by calls that make new
    arrays; others are calls again (eagerly, a result never shares the input's memory)."""
    used_by: dict[str, set[str]] = {}
    for line in lines:
        for name in line.uses:
            used_by.setdefault(name, set()).add(line.kind)
    return [
        line.full
        if line.kind == "="
        and (
            line.targets[0] in end
            or not all(map(_makes_new_arrays, used_by.get(line.targets[0], ())))
        )
        else line
        for line in lines
    ]


_GONE = object()  # what a location reads that the step deleted (a module's attribute)


def _now(getter: Callable, args: tuple, kwargs: dict) -> Any:
    try:
        return getter(args, kwargs)
    except KeyError:  # (a location ``H3.__dict__['name']`` the step deleted)
        return _GONE


def _in_module(expr: str) -> bool:
    """Whether location ``expr`` is a module's attribute or buffer (state.locations)."""
    return ".__dict__[" in expr or "._buffers[" in expr


def _kept(t: Tensor) -> bool:
    """Whether ``t`` is a plain ``detach()`` of a tensor with a whole autograd graph."""
    base = t._alias_of
    return (
        base is not None
        and t._view_of is None
        and t._node is None
        and not t.requires_grad
        and t.native is base.native
        and _whole(base)
    )


def _whole(t: Tensor) -> bool:
    """Whether ``t`` has an autograd graph no backward of the step freed."""
    return t._node is not None and shape_of(t._node) is None


def _with_dels(lines: list[_Line], live_after: set[str]) -> list[str]:
    """The lines' text, each value deleted after its last use (``live_after``: kept)."""
    live = set(live_after)
    out: list[str] = []
    for line in reversed(lines):
        dead = sorted(n for n in line.uses.union(line.targets) if n not in live)
        if dead:
            out.append(f"del {', '.join(dead)}")
        out.append(line.text)
        live.update(line.uses)
    return out[::-1]


def _ordered(names: set[str]) -> list[str]:
    return sorted(names, key=lambda n: int(n[1:]))


def tuple_source(parts: list[str]) -> str:
    """The source of a tuple of the expressions ``parts`` (``()`` when there are none)."""
    return "".join(["(", *(f"{p}, " for p in parts), ")"])


def _indent(lines: list[str]) -> str:
    return "".join(f"    {s}\n" for s in lines)


def _foldable(name: str, args: tuple = ()) -> bool:
    """Whether a call of ``name`` on constants ``args`` gives the same result on every
    replay (without ``args``, a call that may draw counts as drawing)."""
    return name not in _NOT_FOLDABLE and not is_random(name, args)


def leaves(value: Any) -> list[Any]:
    """The objects in ``value``, looking into tuples, lists and dicts."""
    if type(value) in (tuple, list):
        return [leaf for item in value for leaf in leaves(item)]
    if type(value) is dict:
        return [leaf for item in value.values() for leaf in leaves(item)]
    return [value]


def _changed_with(t: Tensor, changed: dict[int, int]) -> bool:
    """Whether a tensor that ``t`` views or aliases with one version counter (no ``.data``
    between: that counts apart) is changed in place too (in ``changed``): its write-back
    brings ``t`` up to date and moves ``t``'s version, as the eager change did once."""
    while not t._own_counter:
        above = t._alias_of if t._view_of is None else t._view_of[0]
        if above is None:
            return False
        if id(above) in changed:
            return True
        t = above
    return False


def _count_writes(t: Tensor, writes: int) -> None:
    """Move ``t``'s version (and its views') by ``writes`` in-place writes, as eagerly: the
    step wrote it more than once, or into its memory shared with NumPy (counted on that
    memory, so for every tensor over it, as PyTorch's counter; a ``.data`` tensor's on its
    own counter)."""
    if _numpy_shared(t):
        if _counts_apart(t):
            t._version += writes
            return
        owner = _storage_of(t.backend, t.native)
        root = _counter_root(t)
        for _ in range(writes):
            _count_write(owner, root)
        return
    for _ in range(writes):
        t._take(t.native)
