"""``tw.cuda``: PyTorch's CUDA queries, answered from the torch plugin's device records.

Nothing here imports torch itself: without the torch plugin there is no CUDA device.
PyTorch counts AMD (ROCm) GPUs as ``cuda``, and so does this module.
"""

from __future__ import annotations

import operator
from typing import Any

from tensorweaver import registry, selection
from tensorweaver.backends.torch_records import available
from tensorweaver.contract.errors import OutOfMemoryError
from tensorweaver.contract.records import DeviceRecord
from tensorweaver.cuda import amp

__all__ = [
    "OutOfMemoryError",
    "amp",
    "current_device",
    "device_count",
    "get_device_capability",
    "get_device_name",
    "is_available",
    "is_bf16_supported",
    "manual_seed",
    "manual_seed_all",
    "synchronize",
]

_KINDS = registry.KIND_ALIASES["cuda"]


def is_available() -> bool:
    """Whether the torch backend has a usable CUDA (or ROCm) device."""
    return bool(available(_KINDS))


def device_count() -> int:
    """How many CUDA devices the torch backend sees."""
    return len(available(_KINDS))


def current_device() -> int:
    """The index of the CUDA device in use here: the current one when it is CUDA, else the
    first; raises as PyTorch does when there is none."""
    backend = selection.current_backend()
    if backend.device.kind not in _KINDS:
        backend = selection.backend_of("cuda")
    return backend.device.index


def synchronize(device: Any = None) -> None:
    """Check that the CUDA device exists (``device``: an index, spec or ``tw.device``).

    There is nothing to wait for: a result reaches the host only when it is computed.
    """
    selection.backend_of(f"cuda:{device}" if isinstance(device, int) else device or "cuda")


def device_spec(device: Any = None) -> Any:
    """What ``.cuda(device)`` moves to: ``"cuda"``, ``"cuda:<index>"``, or the spec given."""
    if device is None:
        return "cuda"
    return f"cuda:{device}" if isinstance(device, int) else device


def get_device_name(device: Any = None) -> str:
    """The GPU's name (``"NVIDIA H100 80GB HBM3"``) as the torch backend reports it."""
    return str(_record(device, "get_device_name").detail.get("gpu", "unknown CUDA device"))


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The CUDA compute capability ``(major, minor)``; ROCm GPUs report ``(0, 0)`` here, as
    the torch backend has no compute capability for them."""
    detail = _record(device, "get_device_capability").detail
    major, _, minor = str(detail.get("compute_capability", "0.0")).partition(".")
    return int(major), int(minor)


def is_bf16_supported() -> bool:
    """Whether the current CUDA device computes in bfloat16 natively (False without CUDA)."""
    return is_available() and bool(_record(None, "is_bf16_supported").detail.get("bf16"))


def _record(device: Any, op: str) -> DeviceRecord:
    """The probed record of CUDA device ``device`` (an index, spec, ``tw.device`` or None for
    the current one)."""
    index = current_device() if device is None else device
    if not isinstance(index, int):
        index = selection.backend_of(index).device.index
    records = [r for r in available(_KINDS, probe=True) if r.index == index]
    if not records:
        raise RuntimeError(
            f"tw.cuda.{op}: no CUDA device {index} (tw.cuda.device_count() is "
            f"{device_count()}); install a CUDA build of torch and tensorweaver-torch"
        )
    return records[0]


def manual_seed(seed: int) -> None:
    """Seed the current CUDA device's generator; ignored without CUDA, as in PyTorch."""
    _seed(operator.index(seed), current_device() if is_available() else None)


def manual_seed_all(seed: int) -> None:
    """Seed the generator of every CUDA device in use; ignored without CUDA."""
    _seed(operator.index(seed), None)


def _seed(seed: int, index: int | None) -> None:
    # Backends not created yet are seeded by the next tw.manual_seed (random.seeded).
    for backend in registry.created_backends():
        record = backend.device
        if record.kind in _KINDS and index in (None, record.index):
            backend.seed(seed)
