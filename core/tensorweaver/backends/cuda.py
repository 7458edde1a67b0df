"""``tw.backends.cuda``: PyTorch's CUDA matmul and attention switches, for scripts that set them.

``matmul.allow_tf32`` is the same setting as ``tw.set_float32_matmul_precision`` ("high" when
True, "highest" when False), as in PyTorch; the reduced-precision reduction switches and the
scaled-dot-product-attention kernel choices are remembered and forwarded to torch when it is
imported (the torch backend imports it when it starts). They matter only where the torch
backend runs on CUDA; elsewhere they change nothing, as in PyTorch without CUDA.
"""

from __future__ import annotations

import sys
from typing import Any

from tensorweaver import switches
from tensorweaver.cuda import is_available as _cuda_available

__all__ = [
    "cudnn_sdp_enabled",
    "enable_cudnn_sdp",
    "enable_flash_sdp",
    "enable_math_sdp",
    "enable_mem_efficient_sdp",
    "flash_sdp_enabled",
    "is_built",
    "math_sdp_enabled",
    "matmul",
    "mem_efficient_sdp_enabled",
]


def _torch_cuda() -> Any:
    torch = sys.modules.get("torch")
    return None if torch is None else torch.backends.cuda


def is_built() -> bool:
    """Whether the torch backend's torch was built with CUDA (False without torch)."""
    cuda = _torch_cuda()
    return bool(cuda is not None and cuda.is_built()) or _cuda_available()


class _Matmul:
    """``matmul.allow_tf32`` and the reduced-precision reduction switches."""

    _REDUCTIONS = (
        "allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction",
    )

    def __init__(self) -> None:
        object.__setattr__(self, "_reductions", dict.fromkeys(self._REDUCTIONS, True))

    def __getattr__(self, name: str) -> Any:
        if name == "allow_tf32":
            return switches.get_float32_matmul_precision() != "highest"
        if name in self._REDUCTIONS:
            return self._reductions[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "allow_tf32":
            switches.set_float32_matmul_precision("high" if value else "highest")
            return
        if name not in self._REDUCTIONS:
            raise AttributeError(f"Unknown attribute {name}")
        self._reductions[name] = bool(value)
        cuda = _torch_cuda()
        if cuda is not None:
            setattr(cuda.matmul, name, value)


matmul = _Matmul()

_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def _sdp_switch(kind: str) -> tuple:
    def enable(enabled: bool) -> None:
        _SDP[kind] = bool(enabled)
        cuda = _torch_cuda()
        if cuda is not None:
            getattr(cuda, f"enable_{kind}_sdp")(enabled)

    def query() -> bool:
        return _SDP[kind]

    enable.__name__, query.__name__ = f"enable_{kind}_sdp", f"{kind}_sdp_enabled"
    enable.__doc__ = f"Allow (or forbid) the {kind} attention kernel on CUDA."
    query.__doc__ = f"Whether the {kind} attention kernel is allowed on CUDA."
    return enable, query


enable_flash_sdp, flash_sdp_enabled = _sdp_switch("flash")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _sdp_switch("mem_efficient")
enable_math_sdp, math_sdp_enabled = _sdp_switch("math")
enable_cudnn_sdp, cudnn_sdp_enabled = _sdp_switch("cudnn")
