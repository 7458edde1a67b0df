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

autocast, GradScaler = amp.deprecated_spellings("cuda", dtypes.float16)


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
