"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_``."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Union

import tensorweaver as tw
from tensorweaver.tensor import Tensor

TensorOrTensors = Union[Tensor, Iterable[Tensor]]


def _grads(parameters: TensorOrTensors) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(
    parameters: TensorOrTensors,
    max_norm: float,
    norm_type: Union[float, str] = 2.0,
    error_if_nonfinite: bool = False,
    foreach: None = None,
) -> Tensor:
    """Scale all gradients together so that their joint ``norm_type``-norm is at most
    ``max_norm``; returns the norm before clipping. ``foreach`` is accepted for PyTorch
    compatibility and has no effect."""
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return tw.tensor(0.0)
    device = grads[0].device
    norms = [g.detach().norm(norm_type).to(device) for g in grads]
    stacked = tw.stack(norms)
    total = stacked.amax() if math.isinf(norm_type) else stacked.norm(norm_type)
    if error_if_nonfinite and not bool(tw.isfinite(total)):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is "
            "non-finite, so it cannot be clipped; set error_if_nonfinite=False to skip this check"
        )
    # The 1e-6 keeps the factor finite for a zero norm; clamping to 1 only ever shrinks.
    factor = tw.clamp(max_norm / (total + 1e-6), max=1.0)
    with tw.no_grad():
        for g in grads:
            g.mul_(factor.to(g.device).to(g.dtype))
    return total


def clip_grad_value_(parameters: TensorOrTensors, clip_value: float, foreach: None = None) -> None:
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with tw.no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
