"""``tw.cuda`` memory counters: torch's caching allocator's, which the torch backend uses.

Without a CUDA device they answer as PyTorch's CPU build: 0 bytes, an empty ``memory_stats``,
``empty_cache`` does nothing, and resetting the peaks raises (AttributeError, as there).
"""

from __future__ import annotations

from typing import Any

from tensorweaver.cuda.runtime import index, torch_cuda


def empty_cache() -> None:
    """Release torch's cached, unused CUDA memory (nothing to do without CUDA)."""
    cuda = torch_cuda()
    if cuda is not None:
        cuda.empty_cache()


def _counter(name: str) -> Any:
    def count(device: Any = None) -> int:
        cuda = torch_cuda()
        return 0 if cuda is None else int(getattr(cuda, name)(index(device)))

    count.__name__ = name
    count.__doc__ = f"torch's ``{name}`` in bytes for a CUDA device (0 without CUDA)."
    return count


memory_allocated = _counter("memory_allocated")
max_memory_allocated = _counter("max_memory_allocated")
memory_reserved = _counter("memory_reserved")
max_memory_reserved = _counter("max_memory_reserved")


def memory_stats(device: Any = None) -> dict[str, Any]:
    """torch's allocator statistics for a CUDA device (empty without CUDA)."""
    cuda = torch_cuda()
    return {} if cuda is None else dict(cuda.memory_stats(index(device)))


def reset_peak_memory_stats(device: Any = None) -> None:
    """Restart the peak counters (``max_memory_*``) of a CUDA device."""
    cuda = torch_cuda()
    if cuda is None:
        raise AttributeError(
            "tw.cuda.reset_peak_memory_stats: no CUDA device (tw.cuda.is_available() is "
            "False); PyTorch's CPU build raises AttributeError here too"
        )
    cuda.reset_peak_memory_stats(index(device))
