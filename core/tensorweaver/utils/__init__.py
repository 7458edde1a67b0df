"""Utilities under PyTorch's names (``tw.utils.data``, ``tw.utils.checkpoint``)."""

from __future__ import annotations

import importlib
from typing import Any

from tensorweaver.utils import data

__all__ = ["checkpoint", "data"]


def __getattr__(name: str) -> Any:
    # ``checkpoint`` loads on first use: most programs never call it.
    if name == "checkpoint":
        return importlib.import_module(__name__ + ".checkpoint")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
