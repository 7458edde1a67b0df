"""``tw.xpu``: PyTorch's Intel-GPU queries. No TensorWeaver backend drives Intel GPUs, so
these answer as PyTorch's build without XPU does: none is available."""

from __future__ import annotations

__all__ = ["device_count", "empty_cache", "is_available", "manual_seed", "manual_seed_all"]


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
