"""``tw.nn.attention``: PyTorch's choice of scaled-dot-product-attention kernels.

``sdpa_kernel`` allows only the listed kernels inside the block by setting the switches of
``tw.backends.cuda`` (``enable_flash_sdp`` ...), which reach torch's own kernels when the
torch backend runs on CUDA. Elsewhere attention has one computation, and the choice
changes nothing: a no-op, as PyTorch's on a CPU. ``set_priority`` is accepted and ignored.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from enum import Enum

from tensorweaver.backends import cuda as _cuda

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(Enum):
    """The attention kernels (PyTorch's names and values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


# Each kernel's switch in tw.backends.cuda.
_SWITCHES = {
    SDPBackend.MATH: "math",
    SDPBackend.FLASH_ATTENTION: "flash",
    SDPBackend.EFFICIENT_ATTENTION: "mem_efficient",
    SDPBackend.CUDNN_ATTENTION: "cudnn",
}


def _set(allowed: dict[str, bool]) -> None:
    for kind, on in allowed.items():
        getattr(_cuda, f"enable_{kind}_sdp")(on)


@contextlib.contextmanager
def sdpa_kernel(backends: list[SDPBackend] | SDPBackend, set_priority: bool = False) -> Iterator:
    """Allow only ``backends`` for scaled dot product attention inside the block; the
    previous switches come back after it."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(
            "Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
            f"got {type(backends).__name__}"
        )
    chosen = {backends} if isinstance(backends, SDPBackend) else set(backends)
    previous = {kind: getattr(_cuda, f"{kind}_sdp_enabled")() for kind in _SWITCHES.values()}
    try:
        _set({kind: b in chosen for b, kind in _SWITCHES.items()})
        yield {}
    finally:
        _set(previous)
