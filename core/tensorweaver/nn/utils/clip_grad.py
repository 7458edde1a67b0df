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


def get_total_norm(
    tensors: TensorOrTensors,
    norm_type: Union[float, str] = 2.0,
    error_if_nonfinite: bool = False,
    foreach: None = None,
) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together, as if concatenated (PyTorch 2.6's
    first half of ``clip_grad_norm_``). ``foreach`` is accepted and has no effect."""
    tensors = [tensors] if isinstance(tensors, Tensor) else [t for t in tensors if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return tw.tensor(0.0)
    device = tensors[0].device
    norms = [t.detach().norm(norm_type).to(device) for t in tensors]
    stacked = tw.stack(norms)
    total = stacked.amax() if math.isinf(norm_type) else stacked.norm(norm_type)
    if error_if_nonfinite and not bool(tw.isfinite(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def clip_grads_with_norm_(
    parameters: TensorOrTensors, max_norm: float, total_norm: Tensor, foreach: None = None
) -> None:
    """Scale the gradients by ``max_norm / total_norm`` where that is below 1 (the second
    half of ``clip_grad_norm_``)."""
    # The 1e-6 keeps the factor finite for a zero norm; clamping to 1 only ever shrinks.
    factor = tw.clamp(max_norm / (total_norm + 1e-6), max=1.0)
    with tw.no_grad():
        for g in _grads(parameters):
            g.mul_(factor.to(g.device).to(g.dtype))


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
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_value_(parameters: TensorOrTensors, clip_value: float, foreach: None = None) -> None:
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with tw.no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
