"""Recording every primitive a step calls, by wrapping the backend objects' methods.

While a :class:`Recorder` is active, each public method of the watched backend objects is
shadowed by an instance attribute that calls the real method and appends ``(backend, name,
args, kwargs, result)`` to :attr:`Recorder.calls`. Every op reaches its backend as
``tensor.backend.<primitive>(...)``, so this sees the forward, the backward the tape runs
and the optimizer's updates, with no change to tensors, ops or autograd. Calls a backend
makes to its own methods (a fused op built from primitives) are not recorded: replaying
the outer call repeats them.

A read of values for the user's code through ``Tensor.item`` or ``tolist`` returns an
array whose values report how the step uses them (:mod:`.reads`); other reads for the
user's code (``print``, ``.numpy()``) make the step one a replay cannot repeat.

The recorder holds every argument and result until it is closed, so that object ids stay
unique while the graph is built from them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

from tensorweaver.compiler.draws import DRAWS, is_random
from tensorweaver.compiler.reads import ReadLog
from tensorweaver.ops.bounds import REGION_LISTENERS, Region

#: Methods that only describe arrays or steer the backend: passed through, not recorded.
PASSTHROUGH = frozenset(
    {"storage", "layout", "strides", "get_num_threads", "set_num_threads", "set_tf32", "has_tf32"}
)
#: Methods that read array values back to the host: the step depends on data.
HOST_READS = frozenset({"to_host", "host_view"})
#: The core package's folder (frames in it are TensorWeaver's, not the user's).
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: Where a host read is the user's (``.item()``, ``.tolist()``, ``bool(t)``, ``print``):
#: the core files whose direct calls read values for the user's Python code. Other host
#: reads are the core's own argument checks (index bounds, class targets), which a replay
#: repeats and compares with the traced values.
_TENSOR = _PACKAGE + "tensor.py"
_USER_READERS = (_TENSOR, _PACKAGE + "printing.py")


class HostRead(RuntimeError):
    """A traced step read a tensor's values into Python (``fullgraph=True`` forbids it)."""


#: Tensor methods whose reads a replay repeats (:mod:`.reads`).
_REPLAYED_READS = frozenset({"item", "tolist"})


def _user_reader() -> str | None:
    """The name of the function that called the backend method, if it reads values for the
    user's code; else None."""
    code = sys._getframe(2).f_code
    return code.co_name if os.path.abspath(code.co_filename) in _USER_READERS else None


def _for_user_code() -> bool:
    """Whether the ``Tensor`` method reading values (the caller of the backend method's
    caller) was called by the user's code, directly or through other ``Tensor`` methods
    (``bool(t)`` calls ``item``), rather than by TensorWeaver's own code."""
    frame = sys._getframe(3)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) == _TENSOR:
        frame = frame.f_back
    return frame is not None and not os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE)


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
        # Where the user's code first read values in a way a replay cannot repeat, if it did
        # (``print``, ``.numpy()``); reads that a replay repeats are in ``reads``.
        self.host_read: str | None = None
        self.reads = ReadLog(lambda: len(self.calls))
        # id(host array a core check read) -> the region of its (min, max) in which the
        # check decides as it did (ops/bounds.py): the replay checks that region.
        self.regions: dict[int, Region] = {}
        self._depth = 0

    def open(self) -> None:
        REGION_LISTENERS.append(self._region)
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
        if self._region in REGION_LISTENERS:
            REGION_LISTENERS.remove(self._region)
        for backend in self.backends:
            for name in [n for n, v in vars(backend).items() if getattr(v, "_tw_recording", 0)]:
                delattr(backend, name)

    @contextlib.contextmanager
    def unrecorded(self) -> Iterator[None]:
        """Calls made inside are not recorded (an optimizer's write of a scalar tensor whose
        new array the replay makes itself: optim/optimizer.py ``TRACED``)."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def _region(self, host: Any, region: Region) -> None:
        self.regions[id(host)] = region

    def _wrap(self, backend: Any, name: str, real: Callable) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return real(*args, **kwargs)
            reader = _user_reader() if name in HOST_READS else None
            if reader is not None:
                self._read(name)
            self._depth += 1
            try:
                if DRAWS.queued and is_random(name, args):
                    result = DRAWS.queued.popleft()  # drawn by a replay a guard stopped
                else:
                    result = real(*args, **kwargs)
            finally:
                self._depth -= 1
            self.calls.append((backend, name, args, kwargs, result))
            if reader is None:
                return result
            if reader in _REPLAYED_READS and name == "to_host" and isinstance(result, np.ndarray):
                return self.reads.read(result, user_line(), _for_user_code())
            if self.host_read is None:
                self.host_read = user_line()
            return result

        call._tw_recording = 1  # type: ignore[attr-defined]
        return call

    def _read(self, name: str) -> None:
        if self.fullgraph:
            raise HostRead(
                f"tw.compile(fullgraph=True): the step reads tensor values into Python "
                f"(backend.{name}, e.g. .item(), .tolist(), bool(tensor), print) at "
                f"{user_line()}, which breaks the graph; move that out of the compiled "
                f"function or use fullgraph=False (the graph is then cut at the read)"
            )
