"""Which device new tensors go to: a process default plus a per-thread, per-task scope.

The scope lives in a ``ContextVar``, so ``with tw.device(...)`` in one thread or
asyncio task never leaks into another; threads and tasks that set nothing use the
process default (``tw.set_backend``, else ``TENSORWEAVER_BACKEND``, else ``numpy``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from tensorweaver import registry
from tensorweaver.contract.records import DeviceRecord
from tensorweaver.errors import BackendError

BACKEND_ENV = "TENSORWEAVER_BACKEND"

_scoped: ContextVar[Any] = ContextVar("tensorweaver_device", default=None)
_default: list[Any] = []  # the process default backend object, created on first use


class Device:
    """Where a tensor lives: ``name`` is the full spec (``torch:cuda:0``)."""

    __slots__ = ("record",)

    def __init__(self, record: DeviceRecord) -> None:
        self.record = record

    name = property(lambda self: self.record.name)
    backend = property(lambda self: self.record.backend)
    kind = property(lambda self: self.record.kind)
    index = property(lambda self: self.record.index)
    type = kind  # PyTorch's spelling

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Device):
            return self.name == other.name
        if isinstance(other, str):
            try:
                return registry.resolve(other).name == self.name
            except (BackendError, ValueError):
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"device({self.name!r})"


def device_of(backend: Any) -> Device:
    return Device(backend.device)


def _default_backend() -> Any:
    if not _default:
        spec = os.environ.get(BACKEND_ENV, "").strip() or registry.DEFAULT_BACKEND
        try:
            _default.append(registry.backend_object(spec))
        except (BackendError, ValueError) as exc:
            raise type(exc)(
                f"{exc} (the default device comes from {BACKEND_ENV}={spec!r})"
            ) from exc
    return _default[0]


def current_backend() -> Any:
    """The backend object new tensors are created on, here and now."""
    scoped = _scoped.get()
    return scoped if scoped is not None else _default_backend()


def set_backend(spec: str) -> Device:
    """Make ``spec`` (``numpy``, ``torch:cuda:1``, ``auto``) the process default device."""
    backend = registry.backend_object(spec)
    _default[:] = [backend]
    return device_of(backend)


def get_backend() -> Device:
    """The device new tensors go to in this thread or task."""
    return device_of(current_backend())


@contextmanager
def device(spec: str | Device) -> Iterator[Device]:
    """Within the block (this thread or task only), new tensors go to ``spec``."""
    backend = registry.backend_object(str(spec))
    token = _scoped.set(backend)
    try:
        yield device_of(backend)
    finally:
        _scoped.reset(token)


def use_gpu() -> Device:
    """Make the best GPU of any backend the default; an error lists what exists if none."""
    return set_backend(registry.best_device(registry.GPU_KINDS).name)


def use_cpu() -> Device:
    """Make a CPU the default: the current backend's own CPU when it has one, else NumPy."""
    current = current_backend().device.backend
    try:
        return set_backend(f"{current}:cpu")
    except (BackendError, ValueError):
        return set_backend(registry.DEFAULT_BACKEND)
