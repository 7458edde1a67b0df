"""``tw.mps``: PyTorch's Apple-GPU runtime calls, answered through the torch backend.

The torch backend runs on MPS through torch itself, so these are torch's ``torch.mps``
calls when it has an MPS device; without one they answer as PyTorch does on a machine
without MPS (``empty_cache``, ``synchronize`` and the memory queries raise RuntimeError,
``device_count()`` is 0, ``is_available()`` False, ``manual_seed`` does nothing).
"""

from __future__ import annotations

import importlib
from typing import Any

from tensorweaver.backends.torch_records import available

__all__ = [
    "current_allocated_memory",
    "device_count",
    "driver_allocated_memory",
    "empty_cache",
    "is_available",
    "manual_seed",
    "recommended_max_memory",
    "set_per_process_memory_fraction",
    "synchronize",
]


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


def is_available() -> bool:
    """Whether the torch backend has an MPS device."""
    return device_count() > 0


def current_allocated_memory() -> int:
    """Bytes of MPS memory torch's tensors occupy."""
    return _torch_mps("getCurrentAllocatedMemory").current_allocated_memory()


def driver_allocated_memory() -> int:
    """Bytes of MPS memory the Metal driver holds for torch."""
    return _torch_mps("getDriverAllocatedMemory").driver_allocated_memory()


def recommended_max_memory() -> int:
    """Metal's recommended working-set size, in bytes."""
    return _torch_mps("getRecommendedMaxMemory").recommended_max_memory()


def set_per_process_memory_fraction(fraction: float) -> None:
    """Cap torch's MPS allocations at ``fraction`` of the recommended maximum."""
    _torch_mps("setMemoryFraction").set_per_process_memory_fraction(fraction)


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
