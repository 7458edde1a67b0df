"""``tw.distributed``: PyTorch's process-group queries, answered for a single process.

TensorWeaver scales out through a backend (cuPyNumeric/Legate runs one script on many GPUs
and nodes) rather than through process groups, so there is no process group here:
``is_available()`` and ``is_initialized()`` are False, which is what guards in PyTorch
programs (``if dist.is_available() and dist.is_initialized(): ...``) test for.
"""

from __future__ import annotations


def is_available() -> bool:
    """False: no process-group communication package is built in."""
    return False


def is_initialized() -> bool:
    """False: no default process group exists."""
    return False
