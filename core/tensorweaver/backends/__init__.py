"""``tw.backends``: PyTorch's per-device-family availability queries and switches."""

import importlib
from typing import Any

from tensorweaver.backends import cuda, cudnn, mps

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "openmp", "opt_einsum"]

# Loaded on first use: ``import tensorweaver`` loads this package.
_LAZY = ("cpu", "mkldnn", "openmp", "opt_einsum")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
