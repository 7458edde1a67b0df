"""``var_mean``, ``std_mean`` and ``aminmax`` recorded as PyTorch records them: one node for
both outputs (VarMeanBackward0, StdMeanBackward0, AminmaxBackward0), whose hooks see the
gradient of each output and whose rule gives the input the gradient of both at once
(ops/several_outputs.py ``two_outputs``). The outputs and their gradients are ``var``'s,
``std``'s, ``mean``'s, ``amin``'s and ``amax``'s.
"""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import reduce as red
from tensorweaver.ops.several_outputs import two_outputs
from tensorweaver.tensor import Tensor


def moments(op: str, x: Tensor, dim: Any, correction: float, keepdim: bool) -> tuple:
    """``(var, mean)`` (``op`` "var_mean") or ``(std, mean)`` (``op`` "std_mean") of ``x``
    over ``dim`` with Bessel's ``correction``. The node keeps for std_mean the std, as
    PyTorch's: the mean is recomputed in backward, so changing it in place is allowed."""
    std = op == "std_mean"

    def compute(x: Tensor) -> tuple:
        # (std's own path: a half input's root taken before the cast back, as PyTorch's;
        # its gradient is 0 over a constant slice, not NaN)
        spread = red.std if std else red.var
        return spread(x, dim, correction=correction, keepdim=keepdim), red.mean(x, dim, keepdim)

    def rule(x: Tensor, *saved_and_grads: Any) -> Any:
        *saved, g_spread, g_mean = saved_and_grads
        axes = red.axes_of("var", dim, x.ndim)
        count = math.prod(x.shape[a] for a in axes)
        if count - correction <= 0 or is_grad_enabled():
            # var's own rule for no degrees of freedom; and under create_graph, where the
            # kept std would be a constant (two_outputs differentiates compute)
            return None
        shape = red.kept_shape(tuple(x.shape), axes)
        grad = None
        if g_spread is not None:
            g = g_spread.reshape(shape)
            if std:  # d std = d var / (2 std), 0 where std is 0
                spread = saved[0].reshape(shape)
                g = ew.where(ew.eq(spread, 0), 0.0, g / (2 * spread))
            mean = red.mean(x, dim, True).reshape(shape)
            grad = g * (2 / (count - correction)) * (x - mean)
        if g_mean is not None:
            part = (g_mean.reshape(shape) / count).expand(x.shape)
            grad = part if grad is None else grad + part
        return grad

    label = "StdMeanBackward0" if std else "VarMeanBackward0"
    return two_outputs(label, x, compute, rule, (0,) if std else ())


def aminmax(x: Tensor, axes: tuple, keepdim: bool) -> tuple:
    """``(amin, amax)`` of ``x`` over ``axes`` (all for ``()``); PyTorch's node saves ``x``,
    the max and the min (in that order: what its pack hooks see), and gives each output's
    gradient evenly to the elements equal to it."""

    def compute(x: Tensor) -> tuple:
        return red.amin(x, axes, keepdim), red.amax(x, axes, keepdim)

    def rule(x: Tensor, high: Tensor, low: Tensor, g_low: Any, g_high: Any) -> Tensor:
        shape = red.kept_shape(tuple(x.shape), red.axes_of("aminmax", axes, x.ndim))
        grad = None
        for value, g in ((low, g_low), (high, g_high)):
            if g is not None:
                hit = ew.eq(x, value.reshape(shape)).to(g.dtype)
                part = hit * (g.reshape(shape) / red.sum(hit, axes, True))
                grad = part if grad is None else grad + part
        return grad

    return two_outputs("AminmaxBackward0", x, compute, rule, (1, 0))
