"""Normalisation layers (PyTorch's ``torch.nn.modules.normalization``): ``LayerNorm``,
``RMSNorm``, ``GroupNorm``, ``LocalResponseNorm`` and ``CrossMapLRN2d``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional, Union

import tensorweaver as tw
from tensorweaver.nn import functional as F
from tensorweaver.nn import init
from tensorweaver.nn.functional.local_response import cross_map_lrn2d
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.parameter import Parameter
from tensorweaver.tensor import Tensor


def affine_parameters(
    module: Module, affine: bool, bias: bool, shape: tuple[int, ...], device: Any, dtype: Any
) -> None:
    """Register ``weight`` (ones) and ``bias`` (zeros) of ``shape``, or None where absent."""
    weight = Parameter(tw.ones(shape, device=device, dtype=dtype)) if affine else None
    module.register_parameter("weight", weight)
    with_bias = affine and bias
    module.register_parameter(
        "bias", Parameter(tw.zeros(shape, device=device, dtype=dtype)) if with_bias else None
    )


def reset_affine(module: Module) -> None:
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


def _shape_tuple(normalized_shape: Union[int, Sequence[int]]) -> tuple[int, ...]:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dimensions, then scale and shift."""

    def __init__(
        self,
        normalized_shape: Union[int, Sequence[int]],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        affine_parameters(self, elementwise_affine, bias, self.normalized_shape, device, dtype)

    def reset_parameters(self) -> None:
        reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class RMSNorm(Module):
    """Divide by the root mean square over the trailing ``normalized_shape`` dims, then scale;
    ``eps=None`` means the input dtype's machine epsilon."""

    def __init__(
        self,
        normalized_shape: Union[int, Sequence[int]],
        eps: Optional[float] = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(tw.ones(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class GroupNorm(Module):
    """Normalise each of ``num_groups`` channel groups of ``(N, C, *)`` inputs, then apply a
    per-channel scale and shift."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(
                f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                f"num_groups ({num_groups})"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        affine_parameters(self, affine, bias, (num_channels,), device, dtype)

    def reset_parameters(self) -> None:
        reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class _ChannelWindowNorm(Module):
    """A response normalisation over a window of ``size`` neighbouring channels."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class LocalResponseNorm(_ChannelWindowNorm):
    """Divide each channel by ``(k + alpha * mean of squares over size neighbouring
    channels) ** beta``, for ``(N, C, ...)`` inputs."""

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)


class CrossMapLRN2d(_ChannelWindowNorm):
    """PyTorch's legacy cross-channel LRN of ``(N, C, H, W)`` inputs, with its exact
    forward (see :func:`tensorweaver.nn.functional.local_response.cross_map_lrn2d`)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)

    def forward(self, input: Tensor) -> Tensor:
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)
