"""Values a traced step reads into Python (``.item()``, ``.tolist()``, ``bool(t)``), and
how it uses them.

A replay cannot stop in the middle of the user's function, so a read is replayed as a call
like any other: ``to_host`` on the replayed array, at the point where the step made it. What
the value was used for decides whether that is enough:

* returned from the step (``return loss.item()``): the replay returns the value it read;
* compared or tested (``if loss.item() > 1``, ``bool(t)``): the outcome is a *guard*
  placed right after the read (an integer or boolean read is its own outcome); a replay
  whose outcome differs stops there (:class:`Branch`) and another graph, traced on that
  path, takes over;
* anything else (arithmetic that flows into a tensor op, ``float()``, ``int()``, a value
  never returned or compared, or one compared with something that is not a Python number):
  the replay cannot reproduce it, and the step runs eagerly.

During the trace a float read is a :class:`ReadFloat`, a :class:`~.symbolic.Sym` whose
expression is the read itself (``R3.reshape(()).item()``; ``R3`` names the array the
recorded ``to_host`` returned), so arithmetic on it stays an expression. An integer or
boolean read is guarded on its value at once, so any use of it is repeatable. A float that
TensorWeaver's own code reads (rather than the user's) is not followed: the step runs
eagerly.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from tensorweaver.compiler.symbolic import Sym

#: The token naming read ``k`` in an expression.
TOKEN = re.compile(r"\bR(\d+)\b")


class Branch(Exception):
    """A replayed read gave a different outcome, ``value``, at guard ``index`` than when
    traced."""

    def __init__(self, index: int, value: Any) -> None:
        super().__init__(index, value)
        self.index = index
        self.value = value


class ReadLog:
    """The reads of one trace: arrays, where the user made them, guards, escapes."""

    def __init__(self, position: Callable[[], int] = lambda: 0) -> None:
        self.position = position  # how many calls were recorded so far
        self.arrays: list[np.ndarray] = []  # what to_host returned, by read index
        self.lines: list[str] = []  # file:line of each read
        # (calls recorded before, expression, its outcome: a bool, or an int read)
        self.guards: list[tuple[int, str, Any]] = []
        self.escaped: set[int] = set()  # reads whose values the step used in other ways
        self.closed = False  # the trace ended (its numbers, kept somewhere, are plain)

    def read(self, array: np.ndarray, line: str, user: bool) -> Any:
        """``array``, read for ``Tensor.item`` or ``tolist`` at ``line`` (for the ``user``'s
        code, or TensorWeaver's own), made to report how the values taken from it are
        used."""
        self.arrays.append(array)
        self.lines.append(line)
        return array.view(_Host)._tag(self, len(self.arrays) - 1, user)

    def append(self, guard: tuple[str, Any]) -> None:
        """A comparison or truth test of a read value (a :class:`Sym` guard)."""
        self.guards.append((self.position(), *guard))

    def escape(self, expr: str) -> None:
        """The reads in ``expr`` went where the replay cannot follow them."""
        self.escaped.update(uses(expr))

    def line(self, indices: set[int]) -> str:
        """Where the first of the reads ``indices`` was made."""
        return self.lines[min(indices)] if indices else "<unknown>"


def uses(text: str) -> set[int]:
    """The reads an expression uses."""
    return {int(k) for k in TOKEN.findall(text)}


def returned(value: Any) -> set[int]:
    """The reads whose values (or numbers computed from them) ``value`` holds."""
    if isinstance(value, Sym):
        return uses(value.expr) if value.live() else set()
    if type(value) in (tuple, list):
        return set().union(*map(returned, value)) if value else set()
    if type(value) is dict:
        return returned(list(value.values()))
    return set()


def plain(value: Any) -> Any:
    """``value`` with read numbers as plain floats (what the caller of a trace gets)."""
    if isinstance(value, Sym):
        return float.__float__(value)
    if type(value) in (tuple, list):
        return type(value)(plain(v) for v in value)
    if type(value) is dict:
        return {k: plain(v) for k, v in value.items()}
    return value


class ReadFloat(Sym):
    """A float read from a tensor while tracing (see the module's docstring)."""

    def live(self) -> bool:
        return not self.guards.closed

    def _unnamed(self, other: Any) -> None:
        self.guards.escape(self.expr)  # combined with a value the replay cannot name

    def __reduce__(self) -> tuple:
        # Pickled or copied (saved with tw.save, say) as the plain float it escapes as.
        self.guards.escape(self.expr)
        return (float, (float.__float__(self),))


def _converted(name: str) -> Any:
    """A conversion to a plain number: where that goes, the replay cannot follow."""
    method = getattr(float, name)

    def convert(self: ReadFloat, *args: Any) -> Any:
        self.guards.escape(self.expr)
        return method(self, *args)

    return convert


for _name in ("__float__", "__int__", "__round__", "__trunc__", "__floor__", "__ceil__"):
    setattr(ReadFloat, _name, _converted(_name))


def _scalar(host: _Host, value: Any, expr: str) -> Any:
    log = host._log
    if type(value) in (bool, int):
        # Guarded on the value itself: whatever the step does with it is then repeatable.
        log.append((expr, value))
    elif type(value) is float and host._user:
        return ReadFloat(value, expr, log)
    else:
        # A complex number, or a float TensorWeaver's own code reads (it may pass the value
        # to NumPy, where its use cannot be followed).
        log.escaped.add(host._index)
    return value


class _Host(np.ndarray):
    """The array a read returns inside tensor.py, whose ``item``/``tolist`` give
    :class:`ReadFloat` s (views made from it, as ``reshape``, keep the tag)."""

    _log: ReadLog | None = None
    _index = 0
    _user = False

    def _tag(self, log: ReadLog, index: int, user: bool) -> _Host:
        self._log, self._index, self._user = log, index, user
        return self

    def __array_finalize__(self, obj: Any) -> None:
        self._log = getattr(obj, "_log", None)
        self._index = getattr(obj, "_index", 0)
        self._user = getattr(obj, "_user", False)

    def item(self, *args: Any) -> Any:
        value = np.ndarray.item(self, *args)
        if self._log is None or args or self.size != 1:
            return value
        return _scalar(self, value, f"R{self._index}.reshape(()).item()")

    def tolist(self) -> Any:
        values = np.ndarray.tolist(self)
        if self._log is None:
            return values
        if self.ndim == 0:
            return self.item()
        flat = [
            _scalar(self, v, f"R{self._index}[{i!r}].item()")
            for i, v in zip(np.ndindex(self.shape), np.ndarray.tolist(self.reshape(-1)))
        ]
        return np.array(flat, dtype=object).reshape(self.shape).tolist() if flat else values
