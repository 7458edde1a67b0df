"""PyTorch 2.13's CPU arithmetic for ``batch_norm``, ``instance_norm``, ``layer_norm`` and
``group_norm`` of a float16 or bfloat16 input whose parameters (weight, bias, running
statistics) are of the input's dtype or absent.

PyTorch computes these in float32 but keeps its statistics in the parameters' dtype: the mean
and inverse standard deviation it saves for the backward pass are rounded to the half type
(batch norm uses the rounded ones in its forward pass too), and its backward formulas, read
from its kernels, are the ones below. With float32 parameters it keeps float32 statistics;
``normalization.py`` computes that case in float32 and rounds once.

Where PyTorch's result depends on its thread count (it sums layer norm's weight and bias
gradients row by row in the half type, per thread), these sum in float32 and round once.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import tensorweaver as tw
from tensorweaver.autograd.function import Function
from tensorweaver.tensor import Tensor


def _rounded(t: Tensor, dtype: tw.dtype) -> Tensor:
    """``t``'s values rounded to ``dtype``, kept in float32; its gradient passes through as if
    unrounded (so a backward formula built on rounded statistics differentiates again)."""
    with tw.no_grad():
        r = t.to(dtype).float()
    return t + (r - t).detach() if t.requires_grad else r


def _float(t: Tensor | None) -> Tensor | None:
    return None if t is None else t.float()


def _moments(x: Tensor, dims: tuple[int, ...], eps: float) -> tuple[Tensor, Tensor]:
    """The mean and ``1 / sqrt(var + eps)`` of float32 ``x`` over ``dims`` (kept)."""
    mean = x.mean(dims, keepdim=True)
    return mean, 1 / (x.var(dims, correction=0, keepdim=True) + eps).sqrt()


def _reciprocal(count: int) -> float:
    """1 / ``count`` as PyTorch's kernels divide in floating point: inf for an empty
    normalized size (whose gradients are then empty, or NaN through the empty mean)."""
    return 1.0 / count if count else math.inf


# layer_norm -----------------------------------------------------------------------------


class _LayerNorm(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, dims, eps, float_forward):  # noqa: ANN001, ANN205
        ctx.save_for_backward(input, weight)
        ctx.dims, ctx.eps = dims, eps
        return float_forward().to(input.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:  # noqa: ANN001
        input, weight = ctx.saved_tensors
        dims, dtype = ctx.dims, input.dtype
        x, dy, gamma = input.float(), grad.float(), _float(weight)
        mean, rstd = (_rounded(s, dtype) for s in _moments(x, dims, ctx.eps))
        scale = _reciprocal(math.prod(x.shape[d] for d in dims))
        dy_gamma = dy if gamma is None else dy * gamma
        ds = (dy * x if gamma is None else dy * x * gamma).sum(dims, keepdim=True)
        db = dy_gamma.sum(dims, keepdim=True)
        b = (db * mean - ds) * rstd * rstd * rstd * scale
        c = -b * mean - db * rstd * scale
        dx = (rstd * dy if gamma is None else rstd * dy * gamma) + b * x + c
        lead = tuple(range(x.dim() - len(dims)))
        dw = db_ = None
        if ctx.needs_input_grad[1]:
            dw = (dy * (x * rstd + -rstd * mean)).sum(lead).to(dtype)
        if ctx.needs_input_grad[2]:
            db_ = dy.sum(lead).to(dtype)
        return dx.to(dtype), dw, db_, None, None, None


def layer_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    normalized_ndim: int,
    eps: float,
    float_forward: Callable[[], Tensor],
) -> Tensor:
    """``float_forward()`` (the float32 result) rounded once, with PyTorch's backward on
    half-rounded statistics."""
    dims = tuple(range(input.dim() - normalized_ndim, input.dim()))
    return _LayerNorm.apply(input, weight, bias, dims, eps, float_forward)


# group_norm -----------------------------------------------------------------------------


class _GroupNorm(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, groups, eps, float_forward):  # noqa: ANN001, ANN205
        ctx.save_for_backward(input, weight)
        ctx.groups, ctx.eps = groups, eps
        return float_forward().to(input.dtype)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:  # noqa: ANN001
        input, weight = ctx.saved_tensors
        dtype, groups = input.dtype, ctx.groups
        n, channels = input.shape[0], input.shape[1]
        per = channels // groups
        # (N, G, C/G, spatial): statistics per (sample, group), sums per (sample, channel)
        # the spatial size spelled out: ``-1`` cannot be inferred for an empty batch (N=0)
        plane = (n, groups, per, math.prod(input.shape[2:]))
        x = input.float().reshape(plane)
        dy = grad.float().reshape(plane)
        mean, rstd = (_rounded(s, dtype) for s in _moments(x, (2, 3), ctx.eps))
        gamma = None if weight is None else weight.float().reshape(1, groups, per, 1)
        ds = (dy * x).sum(3, keepdim=True)
        db = dy.sum(3, keepdim=True)
        ds_g = (ds if gamma is None else ds * gamma).sum(2, keepdim=True)
        db_g = (db if gamma is None else db * gamma).sum(2, keepdim=True)
        scale = _reciprocal(per * x.shape[3])
        c2 = (db_g * mean - ds_g) * rstd * rstd * rstd * scale
        c3 = -c2 * mean - db_g * rstd * scale
        c1 = rstd if gamma is None else rstd * gamma
        dx = (c1 * dy + c2 * x + c3).reshape(input.shape)
        dw = db_ = None
        if ctx.needs_input_grad[1]:
            dw = ((ds - db * mean) * rstd).sum(0).reshape(channels).to(dtype)
        if ctx.needs_input_grad[2]:
            db_ = db.sum(0).reshape(channels).to(dtype)
        return dx.to(dtype), dw, db_, None, None, None


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None,
    bias: Tensor | None,
    eps: float,
    float_forward: Callable[[], Tensor],
) -> Tensor:
    """``float_forward()`` (the float32 result) rounded once, with PyTorch's backward on
    half-rounded statistics."""
    return _GroupNorm.apply(input, weight, bias, num_groups, eps, float_forward)


# batch_norm -----------------------------------------------------------------------------


def _channel(t: Tensor, ndim: int) -> Tensor:
    return t.reshape(1, -1, *([1] * (ndim - 2)))


def _batch_stats(x: Tensor, dtype: tw.dtype, eps: float) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The float32 batch mean and sum of squared deviations per channel, and the mean and
    inverse standard deviation PyTorch saves (rounded to ``dtype``). For bfloat16 its kernel
    keeps the sum of squares in bfloat16 and divides it in bfloat16 (c10's arithmetic rounds
    the quotient); float16 divides the float32 sum."""
    dims = (0, *range(2, x.dim()))
    count = x.numel() // x.shape[1]
    mean = x.mean(dims)
    var_sum = ((x - _channel(mean, x.dim())) ** 2).sum(dims)
    if dtype is tw.bfloat16:
        var = _rounded(_rounded(var_sum, dtype) / count, dtype)
    else:
        var = var_sum / count
    return mean, var_sum, _rounded(mean, dtype), _rounded(1 / (var + eps).sqrt(), dtype)


def _update_running(
    running_mean: Tensor | None,
    running_var: Tensor | None,
    mean: Tensor,
    var_sum: Tensor,
    count: int,
    momentum: float,
) -> None:
    """Move the running statistics toward the batch's as PyTorch's kernels do for each dtype:
    float16 in float32 from the float32 statistics; bfloat16 in bfloat16 products of the
    rounded statistics and momenta (the rounded momentum and one minus it, rounded)."""
    if running_mean is None and running_var is None:
        return
    dtype = (running_mean if running_mean is not None else running_var).dtype
    with tw.no_grad():
        if dtype is tw.float16:
            # float32 products of the float32 statistics and the momenta rounded to float32
            # (float64 products round the other way in ~1 of 200 values)
            take = tw.tensor(momentum, dtype=tw.float32, device=mean.device)
            keep = tw.tensor(1 - momentum, dtype=tw.float32, device=mean.device)
            if running_mean is not None:
                running_mean.copy_(take * mean + keep * running_mean.float())
            if running_var is not None:
                unbiased = var_sum / (count - 1)
                running_var.copy_(take * unbiased + keep * running_var.float())
            return
        # the momentum is rounded to bfloat16 first and its complement taken from that
        # (``1 - momentum`` rounded directly differs for 1/3, 0.9: nn.BatchNorm's momentum=None)
        take = tw.tensor(momentum, dtype=dtype, device=mean.device).float()
        keep = (1 - take).to(dtype).float()
        if running_mean is not None:
            taken = (take * mean.to(dtype).float()).to(dtype).float()
            running_mean.copy_(taken + (keep * running_mean.float()).to(dtype).float())
        if running_var is not None:
            unbiased = (var_sum.to(dtype).float() / (count - 1)).to(dtype).float()
            kept = (keep * running_var.float()).to(dtype).float()
            running_var.copy_(take * unbiased + kept)


class _BatchNorm(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, training, momentum, eps):  # noqa: ANN001, ANN205, E501
        x, dtype, ndim = input.float(), input.dtype, input.dim()
        if training:
            mean, var_sum, saved_mean, invstd = _batch_stats(x, dtype, eps)
            count = input.numel() // input.shape[1]
            _update_running(running_mean, running_var, mean, var_sum, count, momentum)
            mean, running_mean, running_var = saved_mean, None, None
        else:
            mean = running_mean.float()
            invstd = 1 / (running_var.float() + eps).sqrt()
        alpha = invstd if weight is None else invstd * weight.float()
        beta = -(mean * alpha) if bias is None else bias.float() - mean * alpha
        # the running statistics only in eval (training writes them in place)
        ctx.save_for_backward(input, weight, running_mean, running_var)
        ctx.training, ctx.eps = training, eps
        return (x * _channel(alpha, ndim) + _channel(beta, ndim)).to(dtype)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:  # noqa: ANN001
        input, weight, running_mean, running_var = ctx.saved_tensors
        dtype, ndim = input.dtype, input.dim()
        dims = (0, *range(2, ndim))
        count = input.numel() // input.shape[1]
        x, dy = input.float(), grad.float()
        if ctx.training:
            mean, invstd = _batch_stats(x, dtype, ctx.eps)[2:]
        else:
            mean = running_mean.float()
            invstd = 1 / (running_var.float() + ctx.eps).sqrt()
        w = tw.ones_like(invstd) if weight is None else weight.float()
        total = dy.sum(dims)
        centred = x - _channel(mean, ndim)
        dotp = (centred * dy).sum(dims)
        if ctx.training:
            k = dotp * invstd * invstd / count
            dx = (dy - _channel(total / count, ndim) - centred * _channel(k, ndim)) * _channel(
                invstd, ndim
            )
        else:
            dx = dy * _channel(invstd, ndim)
        dx = (dx * _channel(w, ndim)).to(dtype)
        dw = (dotp * invstd).to(dtype) if ctx.needs_input_grad[1] else None
        db = total.to(dtype) if ctx.needs_input_grad[2] else None
        return dx, dw, db, None, None, None, None, None


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None,
    bias: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> Tensor:
    """``batch_norm`` of a half input with half (or no) parameters, as PyTorch's CPU kernel:
    ``x * alpha + beta`` in float32 with ``alpha = invstd * weight`` and ``beta = bias - mean *
    alpha`` from the rounded statistics, rounded once."""
    return _BatchNorm.apply(input, weight, bias, running_mean, running_var, training, momentum, eps)


# instance_norm --------------------------------------------------------------------------


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None,
    bias: Tensor | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
) -> Tensor:
    """PyTorch's: :func:`batch_norm` of the input seen as one sample of ``N * C`` channels,
    with the parameters and running statistics repeated per sample; the running statistics
    then take the mean of their moved copies (rounded once)."""
    n, c = input.shape[0], input.shape[1]

    def repeated(t: Tensor | None) -> Tensor | None:
        return None if t is None else t.repeat(n)

    stats = repeated(running_mean), repeated(running_var)
    flat = input.reshape(1, n * c, *input.shape[2:])
    y = batch_norm(flat, *stats, repeated(weight), repeated(bias), use_input_stats, momentum, eps)
    if use_input_stats:
        with tw.no_grad():
            for s, moved in zip((running_mean, running_var), stats):
                if s is not None:
                    s.copy_(moved.float().reshape(n, c).mean(0))
    return y.reshape(input.shape)
