"""PyTorch's own test databases (``torch.testing._internal``: ``op_db``, ``module_db``),
imported so that ``torch.backends``' flags stay settable: importing them calls
``torch.backends.disable_global_flags()``, which would fail later tests in the same
process that set ``torch.backends.cudnn`` flags (each import costs about 4 s)."""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

import torch


@cache
def internal(name: str) -> ModuleType:
    """``torch.testing._internal.<name>``, imported with the backends' flags left as they were."""
    flags = torch.backends.flags_frozen.__globals__  # the module's own globals
    allowed = flags["__allow_nonbracketed_mutation_flag"]
    try:
        return importlib.import_module(f"torch.testing._internal.{name}")
    finally:
        flags["__allow_nonbracketed_mutation_flag"] = allowed
