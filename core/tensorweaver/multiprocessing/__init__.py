"""``tw.multiprocessing``: Python's ``multiprocessing`` with PyTorch's ``spawn`` and
``start_processes`` (``torch.multiprocessing``), for one machine.

Everything of ``multiprocessing`` is here under its own name (``Process``, ``Queue``,
``get_context``, ``set_start_method``, ``Pool``, ...). Unlike PyTorch's, tensors sent
through a ``Queue`` or ``Pipe`` are pickled (copied), not moved to shared memory.
"""

from __future__ import annotations

import multiprocessing as _mp
from multiprocessing import *  # noqa: F403 - the whole of Python's module, as PyTorch's

from tensorweaver.multiprocessing.spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = [
    *_mp.__all__,
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "get_all_sharing_strategies",
    "get_sharing_strategy",
    "set_sharing_strategy",
    "spawn",
    "start_processes",
]

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = ["file_descriptor"]


def set_sharing_strategy(new_strategy: str) -> None:
    """Remember PyTorch's tensor-sharing strategy (tensors are pickled here, so it changes
    nothing)."""
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}: {sorted(_STRATEGIES)}")
    _strategy[0] = new_strategy


def get_sharing_strategy() -> str:
    """The strategy :func:`set_sharing_strategy` set (PyTorch's default on Linux)."""
    return _strategy[0]


def get_all_sharing_strategies() -> set[str]:
    """PyTorch's strategies on Linux."""
    return set(_STRATEGIES)
