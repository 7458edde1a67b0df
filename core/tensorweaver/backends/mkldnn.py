"""``tw.backends.mkldnn``: PyTorch's oneDNN switch. oneDNN (MKL-DNN) is torch's, used by the
torch backend through torch itself; ``enabled`` is forwarded to torch when it is imported."""

from __future__ import annotations

import sys
import types
from typing import Any

enabled = True


def is_available() -> bool:
    """Whether torch was built with oneDNN (the torch backend's; False without torch)."""
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.backends.mkldnn.is_available())


class _Switches(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        torch = sys.modules.get("torch")
        if name == "enabled" and torch is not None:
            torch.backends.mkldnn.enabled = value
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Switches
