"""``tw.set_num_threads`` and ``tw.get_num_threads``: the intra-op threads of the current
backend. A backend that runs its own thread pool (PyTorch's) steers it through its optional
``set_num_threads``/``get_num_threads`` methods; otherwise the BLAS and OpenMP libraries
loaded in the process are limited through ``threadpoolctl``.

``tw.set_num_interop_threads``/``tw.get_num_interop_threads``: PyTorch's inter-op pool size,
kept as a setting (tw runs ops one after another), settable once as in PyTorch."""

from __future__ import annotations

import numbers
import os
from typing import Any, Optional

_interop_threads: Optional[int] = None  # None until set_num_interop_threads


def set_num_threads(num: int, /) -> None:  # (PyTorch's takes no keywords)
    """Use ``num`` threads for operations within one op on the current backend."""
    n = _positive_int("set_num_threads", num)
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


def set_num_interop_threads(num: int, /) -> None:
    """Set the inter-op pool size; PyTorch allows this once, before any parallel work."""
    global _interop_threads
    n = _positive_int("set_num_interop_threads", num)
    if _interop_threads is not None:
        raise RuntimeError(
            "Error: cannot set number of interop threads after parallel work has started "
            "or set_num_interop_threads called"
        )
    _interop_threads = int(n)


def get_num_interop_threads() -> int:
    """The inter-op pool size: the value set, else one per CPU core as PyTorch's default."""
    return _interop_threads if _interop_threads is not None else os.cpu_count() or 1


def _positive_int(name: str, n: Any) -> int:
    if type(n) is bool or not isinstance(n, numbers.Integral):
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n < 1:
        raise RuntimeError(f"{name} expects a positive integer, got {n}")
    return n


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
