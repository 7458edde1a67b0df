"""``tw.xpu``: PyTorch's Intel-GPU queries. No TensorWeaver backend drives Intel GPUs, so
these answer as PyTorch's build without XPU does: none is available."""

from __future__ import annotations

__all__ = [
    "current_device",
    "device_count",
    "empty_cache",
    "is_available",
    "manual_seed",
    "manual_seed_all",
    "synchronize",
]


def is_available() -> bool:
    """False: no backend runs on Intel GPUs."""
    return False


def device_count() -> int:
    """0: no backend runs on Intel GPUs."""
    return 0


def empty_cache() -> None:
    """Nothing to release (PyTorch without XPU does nothing either)."""


def manual_seed(seed: int) -> None:
    """Ignored without XPU, as in PyTorch."""


def manual_seed_all(seed: int) -> None:
    """Ignored without XPU, as in PyTorch."""


def _not_compiled() -> AssertionError:
    return AssertionError(
        "Torch not compiled with XPU enabled (tw.xpu: no backend runs on Intel GPUs)"
    )


def current_device() -> int:
    """Raises AssertionError, as PyTorch's build without XPU: there is no XPU device."""
    raise _not_compiled()


def synchronize(device: object = None) -> None:
    """Raises AssertionError, as PyTorch's build without XPU: there is no XPU device."""
    raise _not_compiled()
