"""Process-wide switches PyTorch scripts set: deterministic algorithms and float32 matmul
precision (``tw.use_deterministic_algorithms``, ``tw.set_float32_matmul_precision``, ...).

They matter where the torch backend runs (its CUDA kernels have non-deterministic and TF32
variants): a switch is forwarded to torch itself when torch is imported (the torch backend
imports it when it starts) and remembered either way, as ``tw.backends.cudnn``'s switches are.
The NumPy and cuPyNumeric CPU backends are deterministic and compute float32 products in
float32 whatever is set.
"""

from __future__ import annotations

import sys
import warnings

_state = {"deterministic": False, "warn_only": False, "matmul_precision": "highest"}

_PRECISIONS = ("highest", "high", "medium")


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms (``warn_only``: warn instead of raising where an op
    has none)."""
    if not isinstance(mode, bool):
        raise TypeError(
            "use_deterministic_algorithms(): argument 'mode' must be bool, not "
            f"{type(mode).__name__}"
        )
    if not isinstance(warn_only, bool):
        raise TypeError(
            "use_deterministic_algorithms(): argument 'warn_only' must be bool, not "
            f"{type(warn_only).__name__}"
        )
    _state["deterministic"], _state["warn_only"] = mode, warn_only
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["warn_only"]


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"`` (float32 products in float32), ``"high"`` or ``"medium"`` (TF32 or
    bfloat16 allowed where a backend's device has them)."""
    if precision not in _PRECISIONS:
        # PyTorch warns and keeps the current setting.
        warnings.warn(
            f"set_float32_matmul_precision: {precision!r} is not one of 'highest', 'high' or "
            "'medium'; the call has no effect",
            UserWarning,
            stacklevel=2,
        )
        return
    _state["matmul_precision"] = precision
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_float32_matmul_precision(precision)


def get_float32_matmul_precision() -> str:
    return _state["matmul_precision"]
