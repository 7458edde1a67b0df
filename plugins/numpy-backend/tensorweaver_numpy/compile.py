"""The optional ``compile_graph`` hook of the backend API 2.4: a tw.compile'd step's calls
rewritten to call NumPy directly and to write into arrays the step no longer needs, as
NumPy's ``out=`` allows.

Each backend method turns NumPy's floating-point warnings off around its own work
(``_quiet.py``); the compiled step turns them off once around all its calls, and calls the
ufuncs and undecorated methods beneath (``_quiet.loud``).

Eagerly every primitive returns a new array (the IR is functional). In a recorded graph the
last use of each value is known, so where an elementwise call's input dies at that call and
nothing else refers to its memory (one of this backend's own kernels made it: ``_FRESH``),
the call writes its result there: ``maximum(z, 0)`` becomes ``np.maximum(z, 0, out=z)``,
``add(a, b)`` ``np.add(a, b, out=b)`` (and ``np.add(a, b)`` where neither has more
than one axis, whose layout needs no test), and ``where(mask, g, 0)`` (a ReLU's gradient)
multiplies ``g``'s bit patterns, as unsigned words, by the mask: one pass that keeps them
or zeroes them. The foreach updates of optimizers (``_FOREACH``) reuse the first array
they make for the rest of their work, and write into a list argument that dies at the call
(Adam's denominators). A gradient accumulated into ``.grad`` (``foreach_add`` with alpha
1) is one add per pair of real arrays, written in line, and ``sum`` calls
``np.add.reduce`` without the method's frame. Those give the same bits as the eager calls,
while the step allocates less and keeps its arrays in cache. Every other call runs as
recorded.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from tensorweaver_numpy._quiet import loud, silenced
from tensorweaver_numpy.foreach import _F16, _WIDENED, ForeachOps, _scalar

#: The foreach primitives this module runs in its own form (the functions at the end), and
#: which list argument each may write into when that list dies at the call (None: none).
_FOREACH: dict[str, Any] = {
    "foreach_add": None,
    "foreach_lerp": None,
    "foreach_addcmul": None,
    "foreach_addcdiv": 2,
    "foreach_mul": 0,
    "foreach_add_scalar": 0,
    "foreach_div_scalars": 0,
    "foreach_sqrt": 0,
}
#: Which items of a primitive's result are arrays of their own, whose memory no other value
#: refers to: "all" (the result is one such array, or each of its items is), or the item
#: indices. Any other result may share memory with the call's inputs.
_FRESH: dict[str, Any] = {
    **dict.fromkeys(("add", "sub", "mul", "div", "matmul"), "all"),  # bare ufuncs
    "maximum": "all",
    "minimum": "all",
    "where": "all",
    **dict.fromkeys(_FOREACH, "all"),
    "fused_linear": (0,),
    "fused_linear_backward": (0, 1, 2),
    # (a slice of the padded input's gradient, an array of the call's own, is no less so)
    "fused_conv2d": (0,),
    "fused_conv2d_backward": (0, 1, 2),
    "fused_max_pool2d_backward": (0,),
    "fused_max_pool_backward": (0,),
    "fused_max_pool_with_indices_backward": (0,),
}
#: Calls that can write into a dying array argument: the function, and which arguments.
_INTO = {
    "maximum": ("_np_maximum", (0, 1)),  # relu is maximum(0, x)
    "minimum": ("_np_minimum", (0, 1)),
    "add": ("_np_add", (0, 1)),
    "sub": ("_np_subtract", (0, 1)),
    "mul": ("_np_multiply", (0, 1)),
    "div": ("_np_true_divide", (0, 1)),
}
#: Unsigned words of each item size.
_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_VARIABLE = re.compile(r"\bv\d+\b")
_ITEM = re.compile(r"^(v\d+) = (v\d+)\[(\d+)\]$")


class CompiledGraphs:
    """Mixed into the backend class."""

    def compile_graph(self, graph: Any) -> Callable[..., tuple] | None:
        """``graph.fn`` rewritten to reuse dead arrays, calling NumPy's functions directly
        with its floating-point warnings turned off once around all of them."""
        from tensorweaver_numpy.backend import _TRAILING  # (the backend imports this module)

        body = [line.strip() for line in graph.source.splitlines()[1:]]
        rewritten = _Reuse(graph.calls, graph.values, graph.constants).rewrite(body)
        body, names = silenced(rewritten)
        source = f"def compute({', '.join(graph.inputs)}):\n"
        source += "".join(f"    {line}\n" for line in body)
        namespace = {**graph.fn.__globals__, **names}
        for name in graph.methods:
            namespace[name] = loud(namespace[name])
        namespace.update(
            _np_maximum=np.maximum,
            _np_minimum=np.minimum,
            _np_add=np.add,
            _np_subtract=np.subtract,
            _np_multiply=np.multiply,
            _np_true_divide=np.true_divide,
            _np_add_reduce=np.add.reduce,
            _TRAILING=_TRAILING,
            _keep_where=_keep_where,
            _zero_where=_zero_where,
            **{f"_{name}": globals()[f"_{name}"] for name in _FOREACH},
            _foreach_add_one=_foreach_add_one,
        )
        exec(compile(source, "<tw.compile on numpy>", "exec"), namespace)  # noqa: S102
        return namespace["compute"]


class _Reuse:
    """Which memory each value of a graph refers to, and which calls may write into it."""

    def __init__(self, calls: tuple, values: dict, constants: dict) -> None:
        self.calls = {c.result: c for c in calls}
        self.values = values  # name -> (shape, dtype)
        self.constants = constants
        self.refs: dict[str, set] = {}  # value -> the buffers it may refer to
        self.owner: dict[str, Any] = {}  # value -> the buffer it is the whole array of
        self.holders: dict[Any, set[str]] = {}  # buffer -> values that may refer to it
        self.last: dict[str, int] = {}  # value -> the line of its last use

    def rewrite(self, lines: list[str]) -> list[str]:
        for i, line in enumerate(lines):
            if not line.startswith("del "):
                for name in _VARIABLE.findall(line.split(" = ", 1)[-1]):
                    self.last[name] = len(lines) if line.startswith("return") else i
        out = []
        for i, line in enumerate(lines):
            if line.startswith(("del ", "return")):
                out.append(line)
                continue
            target, expr = line.split(" = ", 1)
            self.last.setdefault(target, i)  # never used: dead at once
            item = _ITEM.match(line)
            if item is not None:
                self._item(target, item.group(2), int(item.group(3)))
            elif target in self.calls:
                line = self._call(target, expr, i)
            else:
                self._derived(target, expr)
            out.append(line)
        return out

    def _hold(self, value: str, refs: set, owner: Any = None) -> None:
        self.refs[value] = refs
        for buffer in refs:
            self.holders.setdefault(buffer, set()).add(value)
        if owner is not None:
            self.owner[value] = owner

    def _derived(self, target: str, expr: str) -> None:
        """A value that may refer to any memory of the values ``expr`` names."""
        names = _VARIABLE.findall(expr)
        self._hold(target, set().union(*(self.refs.get(n, {("input", n)}) for n in names)))

    def _item(self, target: str, parent: str, index: int) -> None:
        call = self.calls.get(parent)
        kind = _FRESH.get(call.primitive) if call is not None else None
        if kind == "all" or (kind and index in kind):
            buffer = (parent, index)
            self._hold(target, {buffer}, buffer)
            self.holders[buffer].add(parent)  # the tuple holds it too
            if (parent, None) in self.holders:  # a foreach list: written in place only
                self.holders[parent, None].add(target)  # while none of its items is used
        else:
            self._derived(target, parent)

    def _call(self, target: str, expr: str, line: int) -> str:
        call = self.calls[target]
        if call.primitive == "contiguous":  # the backend's own test first, without its call
            self._derived(target, expr)
            return f"{target} = {call.args[0]} if {call.args[0]}.flags.c_contiguous else {expr}"
        if call.primitive in _FOREACH:
            return self._foreach(target, call, line)
        if call.primitive == "sum" and len(call.args) == 3 and self._unwidened(call.args[0]):
            # The backend's sum for a dtype it does not widen, without its method's frame,
            # where that is NumPy's own (pairwise) reduction: not over other axes of floats.
            self._derived(target, expr)
            a, axes, keepdims = call.args
            plain = f"_np_add_reduce({a}, {axes}, {a}.dtype, None, {keepdims})"
            shape, dtype = self.values[a]
            reduced = self.constants.get(axes, _VARIABLE)
            if shape is not None and type(reduced) is tuple:
                from tensorweaver_numpy.backend import _TRAILING  # (as compile_graph)

                # (the graph's ranks and dtypes are the traced ones: decided here, once)
                if np.dtype(dtype).kind not in "fc":
                    return f"{target} = {plain}"
                if reduced in _TRAILING[len(shape)]:
                    return f"{target} = {plain} if {a}.flags.c_contiguous else {expr}"
                return f"{target} = {expr}"
            test = f"{a}.flags.c_contiguous and {axes} in _TRAILING[{a}.ndim]"
            return f"{target} = {plain} if {test} or {a}.dtype.kind not in 'fc' else {expr}"
        into = self._where_into(call) if call.primitive == "where" else _INTO.get(call.primitive)
        places = into[1] if into is not None else ()
        dying = next(
            (a for a in map(call.args.__getitem__, places) if self._reusable(a, target, line)), None
        )
        if dying is not None:
            buffer = self.owner[dying]
            self._hold(target, {buffer}, buffer)
            if into[0] in ("_keep_where", "_zero_where"):
                return f"{target} = {into[0]}({call.args[0]}, {dying})"
            return f"{target} = {into[0]}({', '.join(call.args)}, out={dying})"
        if call.primitive in _INTO and self._flat(*call.args):
            # (the method's layout tests pass over operands of at most one axis: the ufunc)
            expr = f"{_INTO[call.primitive][0]}({', '.join(call.args)})"
        if _FRESH.get(call.primitive) == "all":
            self._hold(target, {(target, None)}, (target, None))
        else:  # a tuple's items that are not fresh may share its inputs' memory
            self._derived(target, expr)
        return f"{target} = {expr}"

    def _foreach(self, target: str, call: Any, line: int) -> str:
        """A foreach call through this module's form of it, written into a dying list
        argument where it can be: one the step made with a foreach call, which nothing
        else refers to and no other argument names."""
        args = ", ".join(call.args)
        # The result: a list of arrays of its own (a list the code below may write into).
        self._hold(target, {(target, None)}, (target, None))
        place = _FOREACH[call.primitive]
        if place is not None:
            dying = call.args[place]
            buffer = self.owner.get(dying)
            named = sum(_VARIABLE.findall(a).count(dying) for a in call.args)
            # The list itself may die at this call; an item of it read by another argument
            # of the call must die before it (it would be overwritten while being read).
            if (
                buffer == (dying, None)
                and named == 1
                and all(self.last.get(h, -1) < line or h == dying for h in self.holders[buffer])
                and self.last.get(dying, -1) <= line
            ):
                args += ", into=True"
        if call.primitive == "foreach_add" and _is_one(self.constants.get(call.args[2])):
            xs, ys = _items(call.args[0]), _items(call.args[1])
            if xs and len(xs) == len(ys) and all(map(self._real, xs + ys)):
                # Gradients accumulated into ``.grad``: one add per pair, in line.
                return f"{target} = [{', '.join(f'_np_add({x}, {y})' for x, y in zip(xs, ys))}]"
            return f"{target} = _foreach_add_one({', '.join(call.args[:2])})"
        return f"{target} = _{call.primitive}({args})"

    def _unwidened(self, name: str) -> bool:
        """Whether value ``name`` is an array of a dtype the backend computes in as it is
        (not float16, which some of its methods widen)."""
        meta = self.values.get(name)
        return meta is not None and meta[1] != np.float16

    def _flat(self, a: str, b: str) -> bool:
        """Whether ``a`` is an array and ``b`` an array or a number, each of at most one
        axis (a binary method of layouts.py then calls its ufunc alone)."""
        for name, number_allowed in ((a, False), (b, True)):
            meta, constant = self.values.get(name), self.constants.get(name)
            if meta is not None:
                shape = meta[0]
            elif isinstance(constant, (np.ndarray, np.generic)):
                shape = constant.shape
            elif number_allowed and type(constant) in (int, float, bool):
                continue
            else:
                return False
            if shape is None or len(shape) > 1:
                return False
        return True

    def _real(self, name: str) -> bool:
        """Whether value ``name`` is an unwidened array of a real dtype (``y * 1`` is ``y``)."""
        return self._unwidened(name) and np.dtype(self.values[name][1]).kind in "biuf"

    def _where_into(self, call: Any) -> tuple[str, tuple[int, ...]] | None:
        """How a where with a constant of all-zero bits as one branch (ReLU's gradient,
        masks) writes into its other branch; None for any other where (a -0.0 is no such
        constant: the result must keep its sign)."""
        for constant, form, place in ((2, "_keep_where", 1), (1, "_zero_where", 2)):
            value = self.constants.get(call.args[constant])
            if isinstance(value, (np.ndarray, np.generic)):
                value = np.asarray(value).reshape(-1)
                if (
                    value.dtype.itemsize in _WORDS
                    and not value.view(_WORDS[value.dtype.itemsize]).any()
                ):
                    return form, (place,)
        return None

    def _reusable(self, name: str, result: str, line: int) -> bool:
        """Whether ``result`` may be written into ``name``'s memory: ``name`` is the whole
        of a buffer nothing uses after this line, of ``result``'s shape and dtype."""
        buffer = self.owner.get(name)
        meta, want = self.values.get(name), self.values.get(result)
        if buffer is None or meta is None or meta != want or not meta[0]:
            return False
        return all(self.last.get(h, -1) <= line for h in self.holders[buffer])


_LIST = re.compile(r"^\[(v\d+(?:, v\d+)*)\]$")


def _items(source: str) -> list[str]:
    """The values a list literal of values (``[v3, v7]``) names; [] for any other source."""
    found = _LIST.match(source)
    return found.group(1).split(", ") if found else []


def _keep_where(cond: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``where(cond, a, 0)`` written into ``a``: its bits times 1 or 0."""
    words = a.view(_WORDS[a.dtype.itemsize])
    np.multiply(words, cond, out=words)
    return a


def _zero_where(cond: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``where(cond, 0, b)`` written into ``b``: its bits times 0 or 1 (np.copyto with
    where= took 16x as long on a ReLU gradient of 800k floats)."""
    words = b.view(_WORDS[b.dtype.itemsize])
    np.multiply(words, np.logical_not(cond), out=words)
    return b


def _in_float32(name: str) -> Callable[..., list]:
    """The backend's foreach method ``name`` for lists holding float16 arrays, which it
    computes in float32 (foreach.py): this module's forms below compute in the arrays'
    dtype, so they hand such lists to it."""
    method = getattr(ForeachOps, f"foreach_{name}")

    def call(xs: list, *args: Any, into: bool = False) -> list:
        return method(None, xs, *args)

    return call


_HALF_FORMS = {name: _in_float32(name) for name in _WIDENED}


def _has_half(xs: list) -> bool:
    return any(x.dtype is _F16 for x in xs)


def _into(made: np.ndarray, like: Any) -> bool:
    """Whether ``made`` can hold a result of ``like``'s shape and dtype."""
    return bool(made.ndim) and made.shape == np.shape(like) and made.dtype == like.dtype


def _own(x: np.ndarray, into: bool) -> np.ndarray | None:
    """``out=`` for an elementwise op on ``x`` whose result has x's shape and dtype: x itself
    when ``into`` (not for integers, whose quotient or root is a float, nor for 0-d arrays,
    whose result without ``out=`` is a NumPy scalar)."""
    return x if into and x.ndim and x.dtype.kind in "fc" else None


# The backend's foreach methods (foreach.py), the same ufuncs in the same order, with the
# first array each makes reused for the rest of its work (out=), and, for those given
# ``into=True``, a list argument that dies at the call written into instead. They run
# inside the compiled step, whose warnings are already off.


def _foreach_add(xs: list, ys: list, alpha: float) -> list:
    if _has_half(xs):
        return _HALF_FORMS["add"](xs, ys, alpha)
    out = []
    for x, y in zip(xs, ys):
        t = np.multiply(y, _scalar(alpha, y))
        out.append(np.add(x, t, out=t) if _into(t, x) else np.add(x, t))
    return out


def _is_one(alpha: Any) -> bool:
    """Whether ``alpha`` is the Python number 1 (a gradient accumulated into ``.grad``)."""
    return type(alpha) in (int, float) and alpha == 1


def _foreach_add_one(xs: list, ys: list) -> list:
    """``_foreach_add(xs, ys, 1)``: for a real ``y``, ``y * 1`` is ``y`` bit for bit (no
    arithmetic makes the signalling NaN it would quiet), so one add per pair (written in
    line where the lists and their dtypes are known). A complex ``y * (1 + 0j)`` can differ
    from ``y`` (an imaginary -0.0 becomes 0.0, an infinite part makes a NaN): as recorded."""
    if _has_half(xs) or any(y.dtype.kind == "c" for y in ys):
        return _foreach_add(xs, ys, 1)
    return [np.add(x, y) for x, y in zip(xs, ys)]


def _foreach_lerp(xs: list, ys: list, weight: float) -> list:
    if _has_half(xs):
        return _HALF_FORMS["lerp"](xs, ys, weight)
    out = []
    for x, y in zip(xs, ys):
        t = np.subtract(y, x)
        if _into(t, x):
            out.append(np.add(x, np.multiply(_scalar(weight, x), t, out=t), out=t))
        else:
            out.append(np.add(x, np.multiply(_scalar(weight, x), t)))
    return out


def _foreach_addcmul(xs: list, ys: list, zs: list, value: float) -> list:
    if _has_half(xs):
        return _HALF_FORMS["addcmul"](xs, ys, zs, value)
    out = []
    for x, y, z in zip(xs, ys, zs):
        t = np.multiply(np.multiply(y, _scalar(value, x)), z)  # PyTorch's order
        out.append(np.add(x, t, out=t) if _into(t, x) else np.add(x, t))
    return out


def _foreach_addcdiv(xs: list, ys: list, zs: list, values: list, into: bool = False) -> list:
    if _has_half(xs):
        return _HALF_FORMS["addcdiv"](xs, ys, zs, values)
    out = []
    for x, y, z, v in zip(xs, ys, zs, values):
        t = np.multiply(y, _scalar(v, x))  # PyTorch's order: value * y first, then / z
        t = np.true_divide(t, z, out=_own(t, _into(t, z)))  # t is fresh: no need of `into`
        out.append(np.add(x, t, out=t) if _into(t, x) else np.add(x, t))
    return out


def _foreach_mul(xs: list, scalar: float, into: bool = False) -> list:
    if _has_half(xs):
        return _HALF_FORMS["mul"](xs, scalar)
    return [np.multiply(x, _scalar(scalar, x), out=_own(x, into)) for x in xs]


def _foreach_add_scalar(xs: list, scalar: float, into: bool = False) -> list:
    return [np.add(x, _scalar(scalar, x), out=_own(x, into)) for x in xs]


def _foreach_div_scalars(xs: list, scalars: list, into: bool = False) -> list:
    if _has_half(xs):
        return _HALF_FORMS["div_scalars"](xs, scalars)
    return [np.true_divide(x, _scalar(s, x), out=_own(x, into)) for x, s in zip(xs, scalars)]


def _foreach_sqrt(xs: list, into: bool = False) -> list:
    return [np.sqrt(x, out=_own(x, into)) for x in xs]
