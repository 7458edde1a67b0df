"""``tw.autograd.profiler.profile``: PyTorch's older profiler spelling, over the same
recording as :class:`tensorweaver.profiler.profile` (named ranges' wall times)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tensorweaver.profiler.events import EventList
from tensorweaver.profiler.profile import profile as _profile
from tensorweaver.profiler.profile import record_function

__all__ = ["profile", "record_function"]


class profile(_profile):  # noqa: N801 - PyTorch's name
    """Record ``record_function`` ranges inside the block (nothing when ``enabled`` is
    False); ``table()``, ``key_averages()`` and ``function_events`` read them after it."""

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_cuda: bool = False,
        use_device: str | None = None,
        record_shapes: bool = False,
        with_flops: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_modules: bool = False,
        use_kineto: bool = False,
        use_cpu: bool = True,
        experimental_config: Any = None,
        acc_events: bool = False,
        custom_trace_id_callback: Callable[[], str] | None = None,
    ) -> None:
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory)
        self.enabled = enabled

    def start(self) -> None:
        if self.enabled:
            super().start()

    @property
    def function_events(self) -> EventList:
        """The recorded ranges."""
        return self.events()

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs: Any) -> str:
        """``key_averages().table(...)``."""
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit, **kwargs)
