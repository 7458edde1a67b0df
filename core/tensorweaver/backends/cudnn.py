"""``tw.backends.cudnn``: PyTorch's cuDNN switches, for scripts that set them.

cuDNN is used only by the torch backend on CUDA, through torch itself. Setting a switch here
(``cudnn.benchmark = True``, ``cudnn.deterministic = True``, ``cudnn.enabled``,
``cudnn.allow_tf32``) sets torch's own switch of the same name when torch is already imported
(the torch backend imports it when it starts), and is remembered either way; on other backends
they change nothing, as in PyTorch without CUDA.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from tensorweaver.cuda import is_available as _cuda_available

#: The switches and PyTorch's defaults.
SWITCHES = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True}


def is_available() -> bool:
    """Whether the torch backend has CUDA (torch's CUDA builds carry cuDNN)."""
    return _cuda_available()


def version() -> int | None:
    """torch's cuDNN version when torch is loaded with CUDA, else None (as PyTorch on CPU)."""
    torch = sys.modules.get("torch")
    return torch.backends.cudnn.version() if torch is not None and is_available() else None


class _Switches(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name in SWITCHES:
            torch = sys.modules.get("torch")
            if torch is not None:
                setattr(torch.backends.cudnn, name, value)
        super().__setattr__(name, value)


globals().update(SWITCHES)
sys.modules[__name__].__class__ = _Switches
