"""``torch.nn.utils.skip_init``: a module whose parameters need not be initialized."""

from __future__ import annotations

import inspect
from typing import Any, TypeVar

from tensorweaver.nn.modules.module import Module

__all__ = ["skip_init"]

M = TypeVar("M", bound=Module)


def skip_init(module_cls: type[M], *args: Any, **kwargs: Any) -> M:
    """``module_cls(*args, **kwargs)`` whose parameter values are unspecified, to be
    overwritten by the caller. The IR has no uninitialised memory, so the module is simply
    constructed (its usual initialization is a valid "unspecified" value)."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)
