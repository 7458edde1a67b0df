"""``tw.cuda`` streams and events: torch's, since the torch backend launches its kernels on
torch's current stream (so ``Event.record``/``elapsed_time`` time tensorweaver's work, and
``with tw.cuda.stream(s)`` sends it to ``s``). Without CUDA they raise as PyTorch's CPU build
does; ``stream(None)`` is a no-op context there as here.
"""

from __future__ import annotations

import contextlib
from typing import Any

from tensorweaver.cuda.runtime import index, not_compiled, torch_cuda


class Stream:
    """``torch.cuda.Stream(device=None, priority=0)`` when CUDA is there."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> Any:
        cuda = torch_cuda()
        if cuda is None:
            raise RuntimeError("torch.cuda.Stream requires CUDA support (tw.cuda.Stream)")
        return cuda.Stream(index(device), priority, **kwargs)


class Event:
    """``torch.cuda.Event(enable_timing=False, blocking=False, interprocess=False)`` when
    CUDA is there."""

    def __new__(
        cls,
        enable_timing: bool = False,
        blocking: bool = False,
        interprocess: bool = False,
        external: bool = False,
    ) -> Any:
        cuda = torch_cuda()
        if cuda is None:
            raise RuntimeError(
                "Tried to instantiate dummy base class Event (tw.cuda.Event needs a CUDA "
                "device: tw.cuda.is_available() is False)"
            )
        return cuda.Event(enable_timing, blocking, interprocess, external)


def current_stream(device: Any = None) -> Any:
    """torch's current stream on a CUDA device."""
    cuda = torch_cuda()
    if cuda is None:
        raise not_compiled("current_stream")
    return cuda.current_stream(index(device))


def default_stream(device: Any = None) -> Any:
    """torch's default stream on a CUDA device."""
    cuda = torch_cuda()
    if cuda is None:
        raise not_compiled("default_stream")
    return cuda.default_stream(index(device))


def stream(stream: Any) -> contextlib.AbstractContextManager:
    """Make ``stream`` current inside the block; ``None`` changes nothing."""
    cuda = torch_cuda()
    if stream is None or cuda is None:
        return contextlib.nullcontext()
    return cuda.stream(stream)
