"""The optional ``compile_graph`` hook of the backend API 2.4: a tw.compile'd step's calls
rewritten to write into arrays the step no longer needs, as NumPy's ``out=`` allows.

Eagerly every primitive returns a new array (the IR is functional). In a recorded graph the
last use of each value is known, so where an elementwise call's input dies at that call and
nothing else refers to its memory (one of this backend's own kernels made it: ``_FRESH``),
the call writes its result there: ``maximum(z, 0)`` becomes ``np.maximum(z, 0, out=z)``,
and ``where(mask, g, 0)`` (a ReLU's gradient) multiplies ``g``'s bit patterns, as unsigned
words, by the mask: one pass that keeps them or zeroes them. Those give the same bits as
the eager calls, while the step allocates less and keeps its arrays in cache.
``foreach_add`` (an SGD update) makes one array per tensor instead of two. Every other call
runs as recorded.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

#: Which items of a primitive's result are arrays of their own, whose memory no other value
#: refers to: "all" (the result is one such array, or each of its items is), or the item
#: indices. Any other result may share memory with the call's inputs.
_FRESH: dict[str, Any] = {
    **dict.fromkeys(("add", "sub", "mul", "div", "matmul"), "all"),  # bare ufuncs
    "maximum": "all",
    "minimum": "all",
    "where": "all",
    "foreach_add": "all",
    "fused_linear": (0,),
    "fused_linear_backward": (0, 1, 2),
}
#: Calls that can write into a dying array argument: the function, and which argument.
_INTO = {"maximum": ("_np_maximum", 0), "minimum": ("_np_minimum", 0), "where": ("_keep_where", 1)}
#: Unsigned words of each item size.
_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_VARIABLE = re.compile(r"\bv\d+\b")
_ITEM = re.compile(r"^(v\d+) = (v\d+)\[(\d+)\]$")


class CompiledGraphs:
    """Mixed into the backend class."""

    def compile_graph(self, graph: Any) -> Callable[..., tuple] | None:
        """``graph.fn`` rewritten to reuse dead arrays; None when nothing changes."""
        body = [line.strip() for line in graph.source.splitlines()[1:]]
        rewritten = _Reuse(graph.calls, graph.values, graph.constants).rewrite(body)
        if rewritten == body:
            return None
        source = f"def compute({', '.join(graph.inputs)}):\n"
        source += "".join(f"    {line}\n" for line in rewritten)
        namespace = dict(graph.fn.__globals__)
        namespace.update(
            _np_maximum=np.maximum,
            _np_minimum=np.minimum,
            _keep_where=_keep_where,
            _foreach_add=_foreach_add,
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
        else:
            self._derived(target, parent)

    def _call(self, target: str, expr: str, line: int) -> str:
        call = self.calls[target]
        if call.primitive == "foreach_add":
            expr = "_foreach_add(" + expr.split("(", 1)[1]
        into = _INTO.get(call.primitive)
        dying = call.args[into[1]] if into is not None else None
        if dying is not None and self._reusable(dying, target, line) and self._zero_else(call):
            buffer = self.owner[dying]
            self._hold(target, {buffer}, buffer)
            if into[0] == "_keep_where":
                return f"{target} = _keep_where({call.args[0]}, {dying})"
            return f"{target} = {into[0]}({', '.join(call.args)}, out={dying})"
        if _FRESH.get(call.primitive) == "all" and call.primitive != "foreach_add":
            self._hold(target, {(target, None)}, (target, None))
        else:  # a tuple's items that are not fresh may share its inputs' memory
            self._derived(target, expr)
        return f"{target} = {expr}"

    def _zero_else(self, call: Any) -> bool:
        """Not a where, or one whose third argument is a constant of all-zero bits."""
        if call.primitive != "where":
            return True
        other = self.constants.get(call.args[2])
        return isinstance(other, (np.ndarray, np.generic)) and not np.asarray(other).any()

    def _reusable(self, name: str, result: str, line: int) -> bool:
        """Whether ``result`` may be written into ``name``'s memory: ``name`` is the whole
        of a buffer nothing uses after this line, of ``result``'s shape and dtype."""
        buffer = self.owner.get(name)
        meta, want = self.values.get(name), self.values.get(result)
        if buffer is None or meta is None or meta != want or not meta[0]:
            return False
        return all(self.last.get(h, -1) <= line for h in self.holders[buffer])


def _keep_where(cond: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``where(cond, a, 0)`` written into ``a``: its bits times 1 or 0."""
    words = a.view(_WORDS[a.dtype.itemsize])
    np.multiply(words, cond, out=words)
    return a


def _foreach_add(xs: list, ys: list, alpha: float) -> list:
    """The backend's ``foreach_add`` with the product's array reused for the sum."""
    out = []
    with np.errstate(all="ignore"):
        for x, y in zip(xs, ys):
            scaled = np.multiply(y, np.asarray(alpha, y.dtype))
            if scaled.ndim and scaled.shape == np.shape(x) and scaled.dtype == x.dtype:
                out.append(np.add(x, scaled, out=scaled))
            else:
                out.append(np.add(x, scaled))
    return out
