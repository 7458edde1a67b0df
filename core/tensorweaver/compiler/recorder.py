"""Recording every primitive a step calls, by wrapping the backend objects' methods.

While a :class:`Recorder` is active, each public method of the watched backend objects is
shadowed by an instance attribute that calls the real method and appends ``(backend, name,
args, kwargs, result)`` to :attr:`Recorder.calls`. Every op reaches its backend as
``tensor.backend.<primitive>(...)``, so this sees the forward, the backward the tape runs
and the optimizer's updates, with no change to tensors, ops or autograd. Calls a backend
makes to its own methods (a fused op built from primitives) are not recorded: replaying
the outer call repeats them.

The recorder holds every argument and result until it is closed, so that object ids stay
unique while the graph is built from them.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

#: Methods that only describe arrays or steer the backend: passed through, not recorded.
PASSTHROUGH = frozenset(
    {"storage", "layout", "get_num_threads", "set_num_threads", "set_tf32", "has_tf32"}
)
#: Methods that read array values back to the host: the step depends on data.
HOST_READS = frozenset({"to_host", "host_view"})
#: The core package's folder (frames in it are TensorWeaver's, not the user's).
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: Where a host read is the user's (``.item()``, ``.tolist()``, ``bool(t)``, ``print``):
#: the core files whose direct calls read values for the user's Python code. Other host
#: reads are the core's own argument checks (index bounds, class targets), which a replay
#: repeats and compares with the traced values.
_USER_READERS = (_PACKAGE + "tensor.py", _PACKAGE + "printing.py")


class HostRead(RuntimeError):
    """A traced step read a tensor's values into Python (``fullgraph=True`` forbids it)."""


def _by_user() -> bool:
    """Whether the backend method's caller reads values for the user's code."""
    return os.path.abspath(sys._getframe(2).f_code.co_filename) in _USER_READERS


def user_line() -> str:
    """``file:line`` of the innermost frame outside TensorWeaver (the user's code)."""
    frame = sys._getframe(1)
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


class Recorder:
    """Records the calls made on ``backends`` between :meth:`open` and :meth:`close`."""

    def __init__(self, backends: list[Any], fullgraph: bool) -> None:
        self.backends = backends
        self.fullgraph = fullgraph
        self.calls: list[tuple[Any, str, tuple, dict, Any]] = []
        self.host_read: str | None = None  # where the user's code first read values, if it did
        self._depth = 0

    def open(self) -> None:
        for backend in self.backends:
            if not hasattr(backend, "__dict__"):
                raise TypeError(
                    f"tw.compile: cannot record the calls of {type(backend).__name__}: the "
                    "recorder shadows its methods with instance attributes, and the class "
                    "has __slots__ without __dict__; add '__dict__' to its __slots__"
                )
            for name in dir(type(backend)):
                if name.startswith("_") or name in PASSTHROUGH:
                    continue
                real = getattr(backend, name)
                if callable(real) and not isinstance(real, type):
                    setattr(backend, name, self._wrap(backend, name, real))

    def close(self) -> None:
        for backend in self.backends:
            for name in [n for n, v in vars(backend).items() if getattr(v, "_tw_recording", 0)]:
                delattr(backend, name)

    def _wrap(self, backend: Any, name: str, real: Callable) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return real(*args, **kwargs)
            if name in HOST_READS and _by_user():
                self._read(name)
            self._depth += 1
            try:
                result = real(*args, **kwargs)
            finally:
                self._depth -= 1
            self.calls.append((backend, name, args, kwargs, result))
            return result

        call._tw_recording = 1  # type: ignore[attr-defined]
        return call

    def _read(self, name: str) -> None:
        if self.host_read is None:
            self.host_read = user_line()
        if self.fullgraph:
            raise HostRead(
                f"tw.compile(fullgraph=True): the step reads tensor values into Python "
                f"(backend.{name}, e.g. .item(), .tolist(), bool(tensor), print) at "
                f"{self.host_read}; move that out of the compiled function or use "
                f"fullgraph=False (the function then runs eagerly)"
            )
