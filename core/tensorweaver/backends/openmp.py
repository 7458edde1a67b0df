"""``tw.backends.openmp``: whether the torch backend's torch was built with OpenMP."""

from __future__ import annotations

from tensorweaver.backends import backend_torch


def is_available() -> bool:
    """Whether the torch backend's torch was built with OpenMP (False without the plugin)."""
    torch = backend_torch()
    return bool(torch is not None and torch.backends.openmp.is_available())
