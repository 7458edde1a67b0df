"""``tw.backends.mps``: whether the torch backend has an Apple GPU."""

from __future__ import annotations

from tensorweaver.backends.torch_records import available


def is_available() -> bool:
    """Whether the torch backend (on Apple silicon) has a usable MPS device."""
    return bool(available(("mps",)))
