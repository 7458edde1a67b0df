"""``tw.cuda.amp``: PyTorch's older spelling of autocast and loss scaling for CUDA.

PyTorch deprecates ``torch.cuda.amp.autocast(...)`` and ``torch.cuda.amp.GradScaler(...)`` in
favour of ``torch.amp.autocast("cuda", ...)`` and ``torch.amp.GradScaler("cuda", ...)``, warning
with a ``FutureWarning``; these do the same, so scripts written either way run.
"""

from __future__ import annotations

import warnings
from typing import Any

from tensorweaver import amp
from tensorweaver.contract import dtypes


def autocast(enabled: bool = True, dtype: Any = dtypes.float16, cache_enabled: bool = True) -> Any:
    """``tw.amp.autocast("cuda", dtype=dtype, enabled=enabled)``, with PyTorch's warning."""
    warnings.warn(
        "`torch.cuda.amp.autocast(args...)` is deprecated. "
        "Please use `torch.amp.autocast('cuda', args...)` instead.",
        FutureWarning,
        stacklevel=2,
    )
    return amp.autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """``tw.amp.GradScaler("cuda", ...)``, with PyTorch's deprecation warning."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        warnings.warn(
            "`torch.cuda.amp.GradScaler(args...)` is deprecated. "
            "Please use `torch.amp.GradScaler('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(
            "cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled
        )


def custom_fwd(fwd: Any = None, *, cast_inputs: Any = None) -> Any:
    """``tw.amp.custom_fwd(fwd, device_type="cuda", cast_inputs=...)``, with PyTorch's warning."""
    warnings.warn(
        "`torch.cuda.amp.custom_fwd(args...)` is deprecated. "
        "Please use `torch.amp.custom_fwd(args..., device_type='cuda')` instead.",
        FutureWarning,
        stacklevel=2,
    )
    return amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Any) -> Any:
    """``tw.amp.custom_bwd(bwd, device_type="cuda")``, with PyTorch's warning."""
    warnings.warn(
        "`torch.cuda.amp.custom_bwd(args...)` is deprecated. "
        "Please use `torch.amp.custom_bwd(args..., device_type='cuda')` instead.",
        FutureWarning,
        stacklevel=2,
    )
    return amp.custom_bwd(bwd, device_type="cuda")
