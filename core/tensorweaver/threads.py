"""``tw.set_num_threads`` and ``tw.get_num_threads``: the intra-op threads of the current
backend. A backend that runs its own thread pool (PyTorch's) steers it through its optional
``set_num_threads``/``get_num_threads`` methods; otherwise the BLAS and OpenMP libraries
loaded in the process are limited through ``threadpoolctl``."""

from __future__ import annotations

import numbers
import os
from typing import Any


def set_num_threads(num: int, /) -> None:  # (PyTorch's takes no keywords)
    """Use ``num`` threads for operations within one op on the current backend."""
    n = num
    if type(n) is bool or not isinstance(n, numbers.Integral):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n}")
    backend = _backend()
    method = getattr(backend, "set_num_threads", None)
    if method is not None:
        method(n)
        return
    _threadpoolctl().threadpool_limits(limits=n)


def get_num_threads() -> int:
    """The number of threads the current backend uses within one op."""
    method = getattr(_backend(), "get_num_threads", None)
    if method is not None:
        return method()
    pools = _threadpoolctl().threadpool_info()
    blas = [p for p in pools if p["user_api"] == "blas"] or pools
    if not blas:  # no threaded library loaded yet: everything may use every core
        return os.cpu_count() or 1
    return max(p["num_threads"] for p in blas)


def _backend() -> Any:
    from tensorweaver.selection import current_backend

    return current_backend()


def _threadpoolctl() -> Any:
    try:
        import threadpoolctl
    except ImportError:
        raise RuntimeError(
            "set_num_threads/get_num_threads on this backend need the threadpoolctl package "
            "to reach NumPy's BLAS: pip install threadpoolctl"
        ) from None
    return threadpoolctl
