"""``tw.backends.openmp``: whether the torch backend's torch was built with OpenMP."""

from __future__ import annotations

import sys


def is_available() -> bool:
    """Whether torch was built with OpenMP (False without torch)."""
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.backends.openmp.is_available())
