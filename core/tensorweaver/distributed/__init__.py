"""``tw.distributed``: PyTorch's process-group queries, answered for a single process.

TensorWeaver scales out through a backend (cuPyNumeric/Legate runs one script on many GPUs
and nodes) rather than through process groups, so there is no process group here:
``is_available()`` and ``is_initialized()`` are False, which is what guards in PyTorch
programs (``if dist.is_available() and dist.is_initialized(): ...``) test for.
"""

from __future__ import annotations

import os
from enum import IntEnum
from typing import Any


def is_available() -> bool:
    """False: no process-group communication package is built in."""
    return False


def is_initialized() -> bool:
    """False: no default process group exists."""
    return False


class ReduceOp(IntEnum):
    """The reductions of ``all_reduce`` and friends (PyTorch's names and values)."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


_NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


def _no_group(name: str, doc: str) -> Any:
    def query(*args: Any, **kwargs: Any) -> Any:
        raise ValueError(f"{_NOT_INITIALIZED} (tw.distributed.{name}: {_WHY})")

    query.__name__ = name
    query.__doc__ = f"{doc} Raises ValueError: no process group exists (as PyTorch before init)."
    return query


_WHY = "tensorweaver runs one process; it scales out through a backend such as cuPyNumeric"

get_rank = _no_group("get_rank", "The rank of this process in its group.")
get_world_size = _no_group("get_world_size", "The number of processes in the group.")
get_backend = _no_group("get_backend", "The communication backend of the group.")
barrier = _no_group("barrier", "Wait for every process of the group.")
all_reduce = _no_group("all_reduce", "Reduce a tensor across the group, in place.")
all_gather = _no_group("all_gather", "Gather a tensor from every process of the group.")
broadcast = _no_group("broadcast", "Send a tensor from one process to the group.")


def destroy_process_group(group: Any = None) -> None:
    """Tear a process group down; raises AssertionError without one, as PyTorch."""
    raise AssertionError(f"Process group cannot be None (tw.distributed: {_WHY})")


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: Any = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
) -> None:
    """Raises: multi-process training (process groups, DistributedDataParallel) is not
    supported yet."""
    raise RuntimeError(
        f"tw.distributed.init_process_group(backend={backend!r}): multi-process training is "
        f"not supported yet: {_WHY} (one script on many GPUs and nodes). Run the script as "
        "one process (without torchrun), and guard process-group calls with "
        "tw.distributed.is_initialized()"
    )


def is_nccl_available() -> bool:
    """False: no process-group backend is built in."""
    return False


def is_gloo_available() -> bool:
    """False: no process-group backend is built in."""
    return False


def is_torchelastic_launched() -> bool:
    """Whether torchrun started this process (``TORCHELASTIC_RUN_ID`` is set), as PyTorch."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None
