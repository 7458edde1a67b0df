"""Arrays too large for the host's memory: PyTorch's RuntimeError, not NumPy's errors.

NumPy refuses such an array with ``MemoryError`` (``np.empty(2**55)``) or, where its byte
count or length overflows, ``ValueError`` ("array is too big", "Maximum allowed size
exceeded"); torch 2.13's CPU allocator raises ``RuntimeError`` for all of them. The creation
primitives re-raise them as :class:`~tensorweaver.contract.errors.OutOfMemoryError`, which
both ``except`` clauses catch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from tensorweaver.contract.errors import OutOfMemoryError

#: What NumPy's ValueErrors about an array's size say (other ValueErrors pass unchanged).
_SIZE_MESSAGES = ("too big", "Maximum allowed size")


def allocation_error(
    primitive: str,
    device: str,
    shape: Sequence[int],
    dtype: np.dtype,
    error: Exception | None = None,
) -> Exception:
    """The error to raise where ``primitive`` could not make an array of ``shape`` and
    ``dtype`` (NumPy's ``error``, if it raised one): OutOfMemoryError, or ``error`` itself
    where it is a ValueError about something other than the size."""
    if isinstance(error, ValueError) and not any(m in str(error) for m in _SIZE_MESSAGES):
        return error
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    why = "" if error is None else f" ({error})"
    return OutOfMemoryError(
        f"{primitive}: {device} cannot allocate {nbytes} bytes for a {np.dtype(dtype).name} "
        f"tensor of shape {list(shape)}{why}; ask for a smaller tensor"
    )
