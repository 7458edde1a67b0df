"""The largest array rank a backend takes (its optional ``max_ndim``; Legate's is 6).

A library with such a limit may abort the whole process on a larger array, so the core checks
at the few places where a primitive call can raise the rank (reshape, expand, creation) and
raises a clear error before the call. Ops whose intermediates have more dimensions than their
result (``repeat``, ``kron``, ...) fold adjacent dimensions to stay within :func:`max_ndim`.
"""

from __future__ import annotations

from typing import Any


def max_ndim(backend: Any) -> int | None:
    """The most dimensions an array may have on ``backend``; None: no limit."""
    return getattr(backend, "max_ndim", None)


def check_ndim(op: str, shape: tuple, backend: Any) -> None:
    """Raise RuntimeError, naming ``op``, when an array of ``shape`` cannot exist on ``backend``.

    Call it before the primitive that would create the array, and only where the rank can
    grow: a result no larger than an input's rank always fits.
    """
    limit = getattr(backend, "max_ndim", None)
    if limit is not None and len(shape) > limit:
        raise RuntimeError(
            f"{op}: a tensor of shape {list(shape)} has {len(shape)} dimensions, but the "
            f"{backend.device.name} backend supports at most {limit}; use a backend without "
            "this limit (e.g. tw.set_backend('torch') or 'numpy'), or fewer dimensions (merge "
            "some with reshape or flatten)"
        )
