"""``tw.mps``: PyTorch's Apple-GPU runtime calls, answered through the torch backend.

The torch backend runs on MPS through torch itself, so these are torch's ``torch.mps``
calls when it has an MPS device; without one they answer as PyTorch does on a machine
without MPS (``empty_cache`` and ``synchronize`` raise RuntimeError, ``device_count()`` is 0,
``manual_seed`` does nothing).
"""

from __future__ import annotations

import importlib
from typing import Any

from tensorweaver.backends.torch_records import available

__all__ = ["device_count", "empty_cache", "manual_seed", "synchronize"]


def _torch_mps(op: str) -> Any:
    if available(("mps",)):
        return importlib.import_module("torch").mps
    raise RuntimeError(
        f"Cannot execute {op}() without MPS backend (tw.mps: the torch backend has no MPS "
        "device; tw.backends.mps.is_available() is False)"
    )


def device_count() -> int:
    """How many MPS devices the torch backend has (0 or 1)."""
    return len(available(("mps",)))


def empty_cache() -> None:
    """Release torch's cached, unused MPS memory."""
    _torch_mps("emptyCache").empty_cache()


def synchronize() -> None:
    """Wait for the MPS device's queued work."""
    _torch_mps("deviceSynchronize").synchronize()


def manual_seed(seed: int) -> None:
    """Seed the MPS device's generator; ignored without MPS, as in PyTorch."""
    from tensorweaver import registry

    for backend in registry.created_backends():
        if backend.device.kind == "mps":
            backend.seed(int(seed))
