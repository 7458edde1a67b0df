"""Range checks on values a user hands the core: indices before a backend sees them (the IR
promises backends in-range int64 indices, see :mod:`tensorweaver.contract.ir`) and other
values PyTorch requires in a range (binary cross-entropy's probabilities).

A check reads back two numbers, the minimum and the maximum reduced on the device, never
the array itself: cheap on the hot path (embedding rows, cross-entropy targets) and one small
transfer on an accelerator. A backend's optional ``host_aminmax`` hands both back as Python
numbers in one call; else its optional ``aminmax`` (or ``min`` and ``max``) reduces and
``to_host`` reads. An empty tensor costs nothing.
"""

from __future__ import annotations

from typing import Any, Callable

from tensorweaver.ops.fusion import fused_kernel, optional_kernel
from tensorweaver.tensor import Tensor

#: ``((least min, greatest min), (least max, greatest max))``, bounds included.
Region = tuple[tuple[Any, Any], tuple[Any, Any]]
#: While ``tw.compile`` traces a step, its recorder listens here (:mod:`tensorweaver.compiler
#: .recorder`): it is told of each check's read (the host array of ``(min, max)``) and the
#: region in which the check decides as it did, so that a replay re-checks that region
#: instead of requiring the same values (class targets differ from batch to batch).
REGION_LISTENERS: list[Callable[[Any, Region], None]] = []


def extrema(
    t: Tensor, same_outcome: Callable[[Any, Any], Region | None] | None = None
) -> tuple[Any, Any] | None:
    """``(min, max)`` of ``t``'s elements as Python numbers (NaN if any element is NaN), or
    None when ``t`` is empty. ``same_outcome(min, max)``, where given, is the region of
    ``(min, max)`` values for which the caller's check ends as it does for these (None: it
    depends on the exact values)."""
    n = t.numel()
    if not n:
        return None
    backend = t.backend
    # While tw.compile traces a step, the read must be a to_host of an array: the read its
    # replay repeats and checks (compiler/graph.py).
    read = None if REGION_LISTENERS else getattr(backend, "host_aminmax", None)
    if read is not None:
        return read(t.native)
    both = getattr(backend, "aminmax", None)
    if both is not None:
        pair = both(t.native)
    else:
        flat = t.native if len(t.shape) == 1 else backend.reshape(t.native, (n,))
        pair = backend.cat([backend.min(flat, (0,), True), backend.max(flat, (0,), True)], 0)
    host = backend.to_host(pair)
    low, high = host.tolist()
    if REGION_LISTENERS and same_outcome is not None:
        region = same_outcome(low, high)
        if region is not None:
            REGION_LISTENERS[-1](host, region)
    return low, high


def inside(low: Any, high: Any) -> Callable[[Any, Any], Region | None]:
    """``same_outcome`` for a check that passes when every element lies in ``[low, high]``."""

    def region(least: Any, greatest: Any) -> Region | None:
        if low <= least and greatest <= high:
            return (low, high), (low, high)
        return None  # the check raises

    return region


def checked_by_kernel(backend: Any, name: str) -> bool:
    """Whether the fused composite or optional primitive ``name`` runs on ``backend`` with a
    kernel that raises IndexError for an index out of range itself (the backend's optional
    ``checked_indices``: torch's CPU embedding and nll_loss), so that the core's check, a
    read back, would only repeat it. Never while tw.compile traces a step: its replay
    repeats the core's read, and a compiled form of the kernel need not check."""
    return (
        not REGION_LISTENERS
        and name in getattr(backend, "checked_indices", ())
        and (fused_kernel(backend, name) or optional_kernel(backend, name)) is not None
    )


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
    least = -size if negative else 0
    bounds = extrema(index, _same_wrapping(least, size))
    if bounds is None:
        return False
    low, high = bounds
    if low < least or high >= size:
        bad = low if low < least else high
        raise error(f"{op}: index {bad} is out of bounds for dimension {dim} with size {size}")
    return low < 0


def _same_wrapping(least: int, size: int) -> Callable[[Any, Any], Region | None]:
    """``check_index``'s outcome: in bounds, with some negative index (to wrap) or none."""

    def region(low: Any, high: Any) -> Region | None:
        if low < least or high >= size:
            return None
        if low < 0:
            return (least, -1), (least, size - 1)
        return (0, size - 1), (0, size - 1)

    return region
