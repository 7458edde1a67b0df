"""Folding an eval-mode batch norm into the convolution or linear layer before it
(``torch.nn.utils.fusion``): ``bn(conv(x)) == fused(x)`` with
``w' = w * gamma / sqrt(var + eps)`` per output channel and
``b' = (b - mean) * gamma / sqrt(var + eps) + beta``.
"""

from __future__ import annotations

import copy
from typing import Optional, TypeVar

import tensorweaver as tw
from tensorweaver.nn.modules.batchnorm import _BatchNorm
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.parameter import Parameter
from tensorweaver.tensor import Tensor

__all__ = [
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
]

M = TypeVar("M", bound=Module)


def _folded_bias(
    bias: Optional[Tensor], scale: Tensor, mean: Tensor, bn_b: Optional[Tensor], dtype: tw.dtype
) -> Tensor:
    bias = tw.zeros_like(mean) if bias is None else bias
    shift = tw.zeros_like(mean) if bn_b is None else bn_b
    return ((bias - mean) * scale + shift).to(dtype)


def _check_fusable(owner: str, layer: Module, bn: _BatchNorm) -> None:
    if layer.training or bn.training:
        raise AssertionError(f"{owner}: Fusion only for eval! Call .eval() on both modules")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError(f"{owner}: bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Optional[Tensor],
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Optional[Tensor],
    bn_b: Optional[Tensor],
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """The convolution's weight and bias with the batch norm folded in (``transpose``: the
    output channels are the weight's dimension 1)."""
    scale = tw.rsqrt(bn_rv + bn_eps)
    if bn_w is not None:
        scale = bn_w * scale
    per_channel = [1, -1] if transpose else [-1, 1]
    shape = per_channel + [1] * (conv_w.ndim - 2)
    weight = (conv_w * scale.reshape(shape)).to(conv_w.dtype)
    bias_dtype = conv_w.dtype if conv_b is None else conv_b.dtype
    bias = _folded_bias(conv_b, scale, bn_rm, bn_b, bias_dtype)
    bias_grad = False if conv_b is None else conv_b.requires_grad  # zeros, as PyTorch's
    return Parameter(weight, conv_w.requires_grad), Parameter(bias, bias_grad)


def fuse_linear_bn_weights(
    linear_w: Tensor,
    linear_b: Optional[Tensor],
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor,
    bn_b: Tensor,
) -> tuple[Parameter, Parameter]:
    """The linear layer's weight and bias with the batch norm folded in."""
    scale = bn_w * tw.rsqrt(bn_rv + bn_eps)
    weight = linear_w * scale.unsqueeze(-1).to(linear_w.dtype)
    bias_dtype = linear_w.dtype if linear_b is None else linear_b.dtype
    bias = _folded_bias(linear_b, scale, bn_rm, bn_b, bias_dtype)
    bias_grad = False if linear_b is None else linear_b.requires_grad  # zeros, as PyTorch's
    return Parameter(weight, linear_w.requires_grad), Parameter(bias, bias_grad)


def fuse_conv_bn_eval(conv: M, bn: _BatchNorm, transpose: bool = False) -> M:
    """A copy of ``conv`` computing ``bn(conv(x))`` (both in eval mode)."""
    _check_fusable("fuse_conv_bn_eval", conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose,
    )  # fmt: skip
    return fused


def fuse_linear_bn_eval(linear: M, bn: _BatchNorm) -> M:
    """A copy of ``linear`` computing ``bn(linear(x))`` (both in eval mode; the batch norm
    has ``linear.out_features`` features, or one)."""
    _check_fusable("fuse_linear_bn_eval", linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "fuse_linear_bn_eval: To fuse, linear.out_features == bn.num_features or "
            f"bn.num_features == 1, got linear.out_features={linear.out_features} and "
            f"bn.num_features={bn.num_features}"
        )
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
    )
    return fused
