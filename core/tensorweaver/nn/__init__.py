"""Neural-network building blocks (``tw.nn``): Parameter, Module, layers, init, functional."""

import importlib
from typing import Any

from tensorweaver.nn import functional, init, utils
from tensorweaver.nn.modules import *  # noqa: F403  (the layer classes, listed in modules.__all__)
from tensorweaver.nn.modules import __all__ as _module_names
from tensorweaver.nn.modules.lazy import UninitializedParameter
from tensorweaver.nn.parameter import Buffer, Parameter, UninitializedBuffer

__all__ = [
    "Buffer",
    "Parameter",
    "UninitializedParameter",
    "UninitializedBuffer",
    "functional",
    "init",
    "utils",
    *_module_names,
]


def __getattr__(name: str) -> Any:
    # ``attention`` (sdpa_kernel) loads on first use, as few programs need it.
    if name == "attention":
        return importlib.import_module(f"{__name__}.attention")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
