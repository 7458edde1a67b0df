"""Reverse-mode automatic differentiation (``tw.autograd``)."""

from __future__ import annotations

import sys
import warnings
from typing import Any

from tensorweaver.autograd import anomaly as anomaly_mode
from tensorweaver.autograd import forward_ad, graph
from tensorweaver.autograd import mode as grad_mode
from tensorweaver.autograd.anomaly import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
    set_detect_anomaly,
)
from tensorweaver.autograd.engine import backward, grad
from tensorweaver.autograd.function import Function, FunctionCtx

# As in PyTorch, the names ``gradcheck`` and ``gradgradcheck`` here are the functions, while
# ``from tensorweaver.autograd.gradcheck import gradcheck`` reads the module of that name.
from tensorweaver.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from tensorweaver.autograd.mode import (
    enable_grad,
    inference_mode,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from tensorweaver.autograd.mode import grad_mode_enabled as is_grad_enabled
from tensorweaver.tensor import Tensor

# PyTorch's module names for what lives here under other names, so that a ported
# ``from torch.autograd.grad_mode import no_grad`` imports.
sys.modules[__name__ + ".grad_mode"] = grad_mode
sys.modules[__name__ + ".anomaly_mode"] = anomaly_mode


def __getattr__(name: str) -> Any:
    # ``functional`` (jacobian, hessian, ...) and ``profiler`` load on first use: few
    # programs need them.
    if name in ("functional", "profiler"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "functional", "profiler"})


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """PyTorch's deprecated ``Variable(data, requires_grad=False)``: returns a Tensor, ``data``
    detached, that requires grad as asked. Every Tensor is an instance of ``Variable``."""

    def __new__(  # type: ignore[misc]
        cls, data: Any = None, requires_grad: bool = False, volatile: bool = False
    ) -> Tensor:
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                stacklevel=2,
            )
        if data is None:
            from tensorweaver.ops.creation import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Variable data has to be a tensor, but got {type(data).__name__}: pass "
                "tw.tensor(data), or better, use tensors directly (Variable is deprecated)"
            )
        return data.detach().requires_grad_(requires_grad)


__all__ = [
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "Variable",
    "anomaly_mode",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "forward_ad",
    "functional",
    "grad",
    "graph",
    "grad_mode",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "set_anomaly_enabled",
    "set_detect_anomaly",
    "set_grad_enabled",
]
