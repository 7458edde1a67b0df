"""torch's out-of-memory error, raised on a GPU as a class the core's users catch too.

``except`` compares the raised error's own bases (a virtual subclass does not count), so
``except tw.cuda.OutOfMemoryError`` misses a ``torch.OutOfMemoryError`` unless the error
raised has both classes as bases. A GPU backend's public methods, and the graphs it
compiles, raise it as ``DeviceOutOfMemoryError`` instead. The CPU backend is left as it is:
torch's CPU allocator raises a plain RuntimeError, never this class, so the extra call
would buy nothing there.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import torch
from tensorweaver.contract.errors import OutOfMemoryError


class DeviceOutOfMemoryError(OutOfMemoryError, torch.OutOfMemoryError):
    """A GPU ran out of memory: caught by ``except torch.OutOfMemoryError``, by
    ``except tw.cuda.OutOfMemoryError`` and by ``except MemoryError``."""


def _translating(method: Callable) -> Callable:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except torch.OutOfMemoryError as exc:
            if isinstance(exc, DeviceOutOfMemoryError):
                raise
            raise DeviceOutOfMemoryError(*exc.args).with_traceback(exc.__traceback__) from None

    return call


def _compiling(method: Callable) -> Callable:
    translated = _translating(method)

    @functools.wraps(method)
    def compile_graph(*args: Any, **kwargs: Any) -> Any:
        run = translated(*args, **kwargs)
        return run if run is None else _translating(run)

    return compile_graph


@functools.cache
def on_a_gpu(backend_class: type) -> type:
    """``backend_class`` with every public method raising ``DeviceOutOfMemoryError`` for
    torch's out-of-memory error, and so every graph that ``compile_graph`` returns."""
    methods = {}
    for name in dir(backend_class):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(backend_class, name)
        if isinstance(attr, staticmethod):
            methods[name] = staticmethod(_translating(attr.__func__))
        elif inspect.isfunction(attr):
            methods[name] = _compiling(attr) if name == "compile_graph" else _translating(attr)
    return type(f"Gpu{backend_class.__name__}", (backend_class,), methods)
