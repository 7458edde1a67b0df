"""``tw.cuda``: PyTorch's CUDA queries, answered from the torch plugin's device records.

Nothing here imports torch unless the torch plugin reports a CUDA device; then the memory
counters, streams and events are torch's, as the torch backend allocates and launches there.
PyTorch counts AMD (ROCm) GPUs as ``cuda``, and so does this module.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tensorweaver import registry, selection
from tensorweaver.backends.torch_records import available
from tensorweaver.contract.errors import OutOfMemoryError
from tensorweaver.contract.records import DeviceRecord
from tensorweaver.cuda import amp

if TYPE_CHECKING:
    from tensorweaver.tensor import Tensor

__all__ = [
    "Event",
    "OutOfMemoryError",
    "Stream",
    "amp",
    "current_device",
    "current_stream",
    "default_stream",
    "device_count",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "get_rng_state",
    "get_rng_state_all",
    "is_available",
    "is_bf16_supported",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_peak_memory_stats",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "stream",
    "synchronize",
]

_KINDS = registry.KIND_ALIASES["cuda"]

# Memory counters, streams and events load on first use (tw.cuda loads with tensorweaver).
_LAZY = {
    **dict.fromkeys(
        "empty_cache max_memory_allocated max_memory_reserved memory_allocated "
        "memory_reserved memory_stats reset_peak_memory_stats".split(),
        "tensorweaver.cuda.memory",
    ),
    **dict.fromkeys(
        "Event Stream current_stream default_stream stream".split(), "tensorweaver.cuda.streams"
    ),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
    """Check that the CUDA device exists (``device``: an index, spec or ``tw.device``), and
    wait for torch's queued work on it (what ``Event`` timings need); a result reaches the
    host only when it is computed, so nothing else waits.
    """
    backend = selection.backend_of(
        f"cuda:{device}" if isinstance(device, int) else device or "cuda"
    )
    if backend.device.kind in _KINDS:  # the torch backend's: torch is loaded
        sys.modules["torch"].cuda.synchronize(backend.device.index)


def set_device(device: Any) -> None:
    """PyTorch's ``set_device`` for the CUDA device in use: an index, ``"cuda:<i>"`` or
    ``tw.device``; a negative index does nothing, as in PyTorch.

    TensorWeaver's bare ``"cuda"`` names the current CUDA device (:func:`current_device`),
    which this cannot move: asking for another index raises NotImplementedError (use
    ``"cuda:<i>"`` or ``tw.set_backend("cuda:<i>")``)."""
    if isinstance(device, int):
        index = device
    else:
        spec = selection.device(device)
        if spec.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        index = current_device() if spec.index is None else spec.index
    if index < 0:
        return
    if not is_available():
        raise AttributeError(
            f"tw.cuda.set_device({device!r}): no CUDA device (tw.cuda.is_available() is "
            "False); PyTorch's CPU build raises AttributeError here too"
        )
    if index != current_device():
        raise NotImplementedError(
            f"tw.cuda.set_device({index}): the current CUDA device is {current_device()} and "
            f"tensorweaver cannot re-point a bare 'cuda' at another one; name it: "
            f"'cuda:{index}', or tw.set_backend('cuda:{index}')"
        )
    sys.modules["torch"].cuda.set_device(index)  # available: the torch backend loaded it


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


# --- random streams: each CUDA device's is its torch backend's own generator -------------
# (tensorweaver.random is imported where used: tw.cuda loads before the tensor machinery)


def manual_seed(seed: int) -> None:
    """Seed the current CUDA device's generator (now, or when it is first used); ignored
    without CUDA, as in PyTorch."""
    from tensorweaver import random as rnd

    seed = int(seed)
    if is_available():
        rnd.seed_device(_backend("cuda").device.name, seed, "tw.cuda.manual_seed")


def manual_seed_all(seed: int) -> None:
    """Seed every CUDA device's generator (now, or when each is first used); ignored
    without CUDA."""
    from tensorweaver import random as rnd

    seed = int(seed)
    for record in available(_KINDS):
        rnd.seed_device(record.name, seed, "tw.cuda.manual_seed_all")


def _backend(device: Any) -> Any:
    """The backend object of CUDA device ``device`` (an index, ``"cuda"``: the current one,
    ``"cuda:<i>"``, ``tw.device``); RuntimeError without one."""
    if isinstance(device, str) and device == "cuda":
        device = current_device()  # as torch's: the current CUDA device, not the first
    return selection.backend_of(f"cuda:{device}" if isinstance(device, int) else device)


def get_rng_state(device: Any = "cuda") -> Tensor:
    """The state of CUDA device ``device``'s generator: a uint8 tensor on the host (torch's
    state of the device's generator: its Philox seed and offset)."""
    from tensorweaver import random as rnd

    return rnd.device_rng_state(_backend(device), "tw.cuda.get_rng_state")


def set_rng_state(new_state: Tensor, device: Any = "cuda") -> None:
    """Continue CUDA device ``device``'s generator from a state :func:`get_rng_state`
    returned; ignored without CUDA, as in PyTorch (which defers it to CUDA's start)."""
    from tensorweaver import random as rnd

    if is_available():
        rnd.set_device_rng_state(
            _backend(device), new_state, "tw.cuda.set_rng_state", "tw.cuda.get_rng_state()"
        )


def get_rng_state_all() -> list[Tensor]:
    """:func:`get_rng_state` of every CUDA device, by index ([] without CUDA)."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states: Iterable[Tensor]) -> None:
    """:func:`set_rng_state` of CUDA device ``i`` to the ``i``-th of ``new_states``."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
