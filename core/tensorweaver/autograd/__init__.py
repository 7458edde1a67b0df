"""Reverse-mode automatic differentiation (``tw.autograd``)."""

from tensorweaver.autograd.engine import backward, grad
from tensorweaver.autograd.function import Function, FunctionCtx
from tensorweaver.autograd.mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

__all__ = [
    "Function",
    "FunctionCtx",
    "backward",
    "enable_grad",
    "grad",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "set_grad_enabled",
]
