"""Ctrl-C during a checkpointed run: finish the step, write a checkpoint, then stop."""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType


class DeferredInterrupt:
    """Within the block, a first Ctrl-C (SIGINT) only sets :attr:`requested`, so the run
    can stop at the next step boundary with a consistent checkpoint; a second one raises
    ``KeyboardInterrupt`` at once. Only on the main thread, and only where SIGINT has
    Python's default handler (a program's own handler is left alone)."""

    def __init__(self) -> None:
        self.requested = False
        self._installed = False

    def __enter__(self) -> DeferredInterrupt:
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            signal.signal(signal.SIGINT, self._handler)
            self._installed = True
        return self

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._installed = False
