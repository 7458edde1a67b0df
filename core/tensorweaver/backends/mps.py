"""``tw.backends.mps``: whether the torch backend has an Apple GPU."""

from __future__ import annotations

import sys

from tensorweaver.backends.torch_records import available


def is_available() -> bool:
    """Whether the torch backend (on Apple silicon) has a usable MPS device."""
    return bool(available(("mps",)))


def is_built() -> bool:
    """Whether the torch backend's torch was built with MPS (False without torch)."""
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.backends.mps.is_built()) or is_available()
