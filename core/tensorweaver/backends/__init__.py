"""``tw.backends``: PyTorch's per-device-family availability queries and switches."""

import importlib
import sys
from typing import Any

from tensorweaver.backends import cuda, cudnn, mps
from tensorweaver.backends.torch_records import available

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "openmp", "opt_einsum"]

# Loaded on first use: ``import tensorweaver`` loads this package.
_LAZY = ("cpu", "mkldnn", "openmp", "opt_einsum")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


def backend_torch() -> Any:
    """The torch the torch backend computes with (imported now if it is not yet), or None
    without a working torch plugin: what ``mkldnn``, ``openmp`` and ``cpu`` answer from."""
    torch = sys.modules.get("torch")
    if torch is None:
        # Asked through the plugin, which prepares torch's environment (OpenMP) before the
        # first import of torch.
        if not available(("cpu",)):
            return None
        torch = importlib.import_module("torch")
    return torch
