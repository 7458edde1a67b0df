"""Distances between vectors: ``cosine_similarity`` and ``pairwise_distance`` (``pdist`` is
``tw.pdist``, core/tensorweaver/ops/condensed_distances.py).

Where a norm is zero its gradient is zero, as in PyTorch (a plain ``sqrt`` would give NaN).
"""

from __future__ import annotations

import math

import tensorweaver as tw
from tensorweaver.autograd.function import Function
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.elementwise import in_float32
from tensorweaver.tensor import Tensor


def p_norm(x: Tensor, p: float, dim: int, keepdim: bool = False) -> Tensor:
    """``torch.norm(x, p, dim, keepdim)``: the p-norm of ``x`` along ``dim`` (p = 0 counts the
    non-zero elements, p = ±inf takes the largest/smallest magnitude), with zero gradient at
    a zero vector."""
    if x.dtype in (tw.float16, tw.bfloat16) and p not in (0, math.inf, -math.inf):
        # (powers and sums in float32, as PyTorch's opmath: float16 squares overflow past 256)
        return in_float32(lambda wide: p_norm(wide, p, dim, keepdim), x)
    magnitude = x.abs()
    if p == math.inf:
        return magnitude.amax(dim, keepdim=keepdim)
    if p == -math.inf:
        return magnitude.amin(dim, keepdim=keepdim)
    if p == 0:
        return _NonZeroCount.apply(x, dim, keepdim)
    if p == 1:
        return magnitude.sum(dim, keepdim=keepdim)
    if 0 < p < 1:  # a zero element's power has an infinite slope: PyTorch gives it none
        at_zero = magnitude == 0
        powered = (magnitude.masked_fill(at_zero, 1) ** p).masked_fill(at_zero, 0)
    else:
        powered = x * x if p == 2 and x.dtype.kind == "f" else magnitude**p
    total = powered.sum(dim, keepdim=keepdim)
    zero = total == 0
    # The root's gradient is infinite at 0: take it of 1 there and select 0 afterwards.
    root = total.masked_fill(zero, 1) ** (1.0 / p)
    return root.masked_fill(zero, 0)


class _NonZeroCount(Function):
    """The number of non-zero elements along ``dim``: in the graph when ``x`` is, with no
    gradient (PyTorch's p = 0 norm leaves ``x.grad`` unset, not zero)."""

    @staticmethod
    def forward(ctx, x, dim, keepdim):  # noqa: ANN001, ANN205
        return (x != 0).to(x.dtype).sum(dim, keepdim=keepdim)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:  # noqa: ANN001
        return None, None, None


def _floating(fn: str, *tensors: Tensor) -> None:
    for t in tensors:
        if not t.dtype.is_floating_point:
            raise RuntimeError(
                f"{fn}: expected floating-point inputs, got {t.dtype.name}; convert with .float()"
            )


class _HalfUnit(Function):
    """``x / max(||x||_2, eps)`` along ``dim`` for a float16 or bfloat16 ``x``, with PyTorch's
    CPU arithmetic: the norm accumulated in float32 and rounded once, and the gradient by
    the backward formulas of its division, clamp and norm in the half type, each operation
    rounded (differentiating a composite of half operations rounds in other places).
    ``clamp_passes_gradient``: cosine_similarity clamps under no_grad, so the norm's
    gradient passes the clamp unchanged; normalize's clamp stops it below ``eps``."""

    @staticmethod
    def forward(ctx, x, dim, eps, clamp_passes_gradient):  # noqa: ANN001, ANN205
        norm = p_norm(x, 2, dim, keepdim=True)  # (in float32, rounded once)
        clamped = norm.clamp(min=eps)
        ctx.save_for_backward(x, norm, clamped)
        ctx.dim, ctx.eps, ctx.passes = dim, eps, clamp_passes_gradient
        return x / clamped

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:  # noqa: ANN001
        x, norm, clamped = ctx.saved_tensors
        direct = grad / clamped
        through_clamp = (-grad * ((x / clamped) / clamped)).sum(ctx.dim, keepdim=True)
        if not ctx.passes:
            through_clamp = through_clamp.masked_fill(norm < ctx.eps, 0)
        through_norm = through_clamp * (x / norm).masked_fill(norm == 0, 0)
        return direct + through_norm, None, None, None


def half_unit(x: Tensor, dim: int, eps: float, clamp_passes_gradient: bool) -> Tensor:
    """:class:`_HalfUnit` of a float16 or bfloat16 ``x``."""
    return _HalfUnit.apply(x, dim % max(x.dim(), 1), eps, clamp_passes_gradient)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (after broadcasting them).

    As in PyTorch, each vector is divided by its norm clamped below at ``eps``; the clamp
    passes the gradient of the norm through unchanged."""
    _floating("cosine_similarity", x1, x2)
    x1, x2 = tw.broadcast_tensors(x1, x2)

    def unit(x: Tensor) -> Tensor:
        if x.dtype in (tw.float16, tw.bfloat16):
            return half_unit(x, dim, eps, clamp_passes_gradient=True)
        norm = p_norm(x, 2, dim, keepdim=True)
        return x / (norm + (norm.clamp(min=eps) - norm).detach())

    prod = unit(x1) * unit(x2)
    # PyTorch's sum over one dimension, also of vectors
    return labelled(prod.sum(dim), "SumBackward1", prod)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The p-norm of ``x1 - x2 + eps`` along the last axis of the broadcast pair."""
    dim = max(x1.dim(), x2.dim()) - 1
    # eps is a double in PyTorch's signature: integers promote to the default float dtype even
    # where eps is given as an int.
    diff = x1 - x2 + float(eps)
    if dim < 0:  # two scalars: the norm of a one-element vector
        out = p_norm(diff.reshape(1), p, 0, keepdim=False)
    else:
        out = p_norm(diff, p, dim, keepdim)
    return labelled(out, "NormBackward1", x1, x2)  # PyTorch's norm over one dimension
