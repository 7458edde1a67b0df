"""Range checks on values a user hands the core: indices before a backend sees them (the IR
promises backends in-range int64 indices, see :mod:`tensorweaver.contract.ir`) and other
values PyTorch requires in a range (binary cross-entropy's probabilities).

A check reads back two numbers, the minimum and the maximum reduced on the device, never the
array itself: cheap on the hot path (embedding rows, cross-entropy targets) and one small
transfer on an accelerator. An empty tensor costs nothing.
"""

from __future__ import annotations

from typing import Any

from tensorweaver.tensor import Tensor


def extrema(t: Tensor) -> tuple[Any, Any] | None:
    """``(min, max)`` of ``t``'s elements as Python numbers (NaN if any element is NaN), or
    None when ``t`` is empty."""
    n = t.numel()
    if not n:
        return None
    backend = t.backend
    flat = t.native if len(t.shape) == 1 else backend.reshape(t.native, (n,))
    pair = backend.cat([backend.min(flat, (0,), True), backend.max(flat, (0,), True)], 0)
    low, high = backend.to_host(pair).tolist()
    return low, high


def check_index(
    op: str,
    index: Tensor,
    size: int,
    dim: int,
    *,
    error: type[Exception] = RuntimeError,
    negative: bool = False,
) -> bool:
    """Raise ``error`` (PyTorch's class for ``op``), naming ``op``, ``dim`` and the bad value,
    unless every element of the integer ``index`` lies in ``[0, size)``, or in
    ``[-size, size)`` with ``negative`` (only advanced indexing counts negative indices from
    the end). Returns whether some index is negative, that is, needs wrapping."""
    bounds = extrema(index)
    if bounds is None:
        return False
    low, high = bounds
    least = -size if negative else 0
    if low < least or high >= size:
        bad = low if low < least else high
        raise error(f"{op}: index {bad} is out of bounds for dimension {dim} with size {size}")
    return low < 0
