"""``tw.cpu.amp``: PyTorch's older spelling of autocast and loss scaling on the CPU.

PyTorch deprecates ``torch.cpu.amp.autocast(...)`` and ``torch.cpu.amp.GradScaler(...)`` in
favour of ``torch.amp.autocast("cpu", ...)`` and ``torch.amp.GradScaler("cpu", ...)``, warning
with a ``FutureWarning``; these do the same.
"""

from __future__ import annotations

import warnings
from typing import Any

from tensorweaver import amp
from tensorweaver.contract import dtypes


def autocast(
    enabled: bool = True, dtype: Any = dtypes.bfloat16, cache_enabled: bool = True
) -> amp.autocast:
    """``tw.amp.autocast("cpu", dtype=dtype, enabled=enabled)``, with PyTorch's warning."""
    warnings.warn(
        "`torch.cpu.amp.autocast(args...)` is deprecated. "
        "Please use `torch.amp.autocast('cpu', args...)` instead.",
        FutureWarning,
        stacklevel=2,
    )
    return amp.autocast("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """``tw.amp.GradScaler("cpu", ...)``, with PyTorch's deprecation warning."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        warnings.warn(
            "`torch.cpu.amp.GradScaler(args...)` is deprecated. "
            "Please use `torch.amp.GradScaler('cpu', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
