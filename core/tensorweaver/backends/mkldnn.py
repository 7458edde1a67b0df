"""``tw.backends.mkldnn``: PyTorch's oneDNN switch. oneDNN (MKL-DNN) is torch's, used by the
torch backend through torch itself; ``enabled`` is forwarded to that torch (imported then)."""

from __future__ import annotations

import sys
import types
from typing import Any

from tensorweaver.backends import backend_torch

enabled = True


def is_available() -> bool:
    """Whether the torch backend's torch was built with oneDNN (False without the plugin)."""
    torch = backend_torch()
    return bool(torch is not None and torch.backends.mkldnn.is_available())


class _Switches(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        torch = backend_torch() if name == "enabled" else None
        if torch is not None:
            torch.backends.mkldnn.enabled = value
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Switches
