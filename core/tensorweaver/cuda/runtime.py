"""torch's own CUDA module, reached when the torch backend has a CUDA device.

The torch backend allocates and launches through torch, so its CUDA memory counters,
streams and events are torch's; without a CUDA device the callers answer as PyTorch's CPU
build does.
"""

from __future__ import annotations

import importlib
from typing import Any

from tensorweaver import registry, selection
from tensorweaver.backends.torch_records import available

_KINDS = registry.KIND_ALIASES["cuda"]


def torch_cuda() -> Any:
    """``torch.cuda`` when the torch backend has a usable CUDA device, else None."""
    return importlib.import_module("torch").cuda if available(_KINDS) else None


def index(device: Any) -> int | None:
    """The CUDA index ``device`` (None, an int, a spec or ``tw.device``) names."""
    if device is None or isinstance(device, int):
        return device
    return selection.backend_of(device).device.index


def not_compiled(op: str) -> AssertionError:
    """PyTorch's CPU build's error for a CUDA call that needs a device."""
    return AssertionError(
        f"Torch not compiled with CUDA enabled (tw.cuda.{op}: the torch backend has no CUDA "
        "device; tw.cuda.is_available() is False)"
    )
