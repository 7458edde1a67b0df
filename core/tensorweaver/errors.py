"""Errors the core raises about backends and devices; each says what to do."""

from __future__ import annotations

from tensorweaver.contract.errors import OutOfMemoryError

__all__ = [
    "BackendError",
    "DeviceNotFoundError",
    "OutOfMemoryError",
    "PluginError",
    "UnknownBackendError",
]


class BackendError(RuntimeError):
    """A backend or device request that cannot be honoured."""


class UnknownBackendError(BackendError, ValueError):
    """No installed plugin has the requested backend name."""


class DeviceNotFoundError(BackendError, ValueError):
    """The backend exists but has no such (usable) device."""


class PluginError(BackendError):
    """A plugin is installed but broken: it failed to import, is incompatible, or is incomplete."""
