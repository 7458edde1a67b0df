"""``max_unpool1d/2d/3d``: the partial inverse of max pooling.

Each value is scattered to the flat spatial position its index names in a zero output, so
the gradient of the input is the output gradient gathered at those positions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional

import tensorweaver as tw
from tensorweaver.amp import autocast_dtype, float32_operands
from tensorweaver.nn.functional.conv import _ntuple, kernel_layout
from tensorweaver.nn.functional.pooling import Size
from tensorweaver.tensor import Tensor


def _output_size(
    input: Tensor,
    nd: int,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    output_size: Optional[Sequence[int]],
    fn: str,
) -> tuple[int, ...]:
    """The spatial output sizes: PyTorch's default, or ``output_size`` (its last ``nd``
    entries) when that is within one stride of it."""
    default = tuple(
        (n - 1) * s - 2 * p + k for n, k, s, p in zip(input.shape[-nd:], kernel, stride, padding)
    )
    if output_size is None:
        return default
    sizes = tuple(int(v) for v in output_size)
    if len(sizes) == nd + 2:
        sizes = sizes[2:]
    if len(sizes) != nd:
        raise ValueError(
            f"{fn}: output_size should be a sequence of {nd} (or {nd + 2}) ints, got "
            f"{tuple(output_size)}"
        )
    for size, low, s in zip(sizes, default, stride):
        if not low - s < size < low + s:
            raise ValueError(
                f"{fn}: output_size {sizes} is out of range: each size must lie strictly between "
                f"{tuple(d - s for d, s in zip(default, stride))} and "
                f"{tuple(d + s for d, s in zip(default, stride))}"
            )
    return sizes


def _max_unpool(
    input: Tensor,
    indices: Tensor,
    nd: int,
    kernel_size: Size,
    stride: Optional[Size],
    padding: Size,
    output_size: Optional[Sequence[int]],
    fn: str,
) -> Tensor:
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{fn}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input, got shape "
            f"{tuple(input.shape)}"
        )
    if tuple(indices.shape) != tuple(input.shape) or indices.dtype is not tw.int64:
        raise RuntimeError(
            f"{fn}: indices must be int64 with the input's shape {tuple(input.shape)}, got "
            f"{indices.dtype.name} of shape {tuple(indices.shape)}"
        )
    kernel = _ntuple(kernel_size, nd, fn, "kernel_size")
    stride = kernel if stride is None else _ntuple(stride, nd, fn, "stride")
    padding = _ntuple(padding, nd, fn, "padding")
    sizes = _output_size(input, nd, kernel, stride, padding, output_size, fn)
    lead = tuple(input.shape[:-nd])
    flat_in = input.flatten(len(lead))
    flat_idx = indices.flatten(len(lead))
    total = math.prod(sizes)
    if flat_idx.numel() and (bool((flat_idx < 0).any()) or bool((flat_idx >= total).any())):
        raise RuntimeError(
            f"{fn}: found an index outside the output of spatial size {sizes}; the indices "
            "must come from the matching max pooling"
        )
    out = tw.zeros(*lead, total, dtype=input.dtype, device=input.device)
    out = out.scatter(len(lead), flat_idx, flat_in).reshape(*lead, *sizes)
    # torch's max_unpool2d keeps a channels-last input's layout (its 1-D and 3-D: C order)
    return kernel_layout(out, input) if nd == 2 and input.dim() == 4 else out


def max_unpool1d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Size,
    stride: Optional[Size] = None,
    padding: Size = 0,
    output_size: Optional[Sequence[int]] = None,
) -> Tensor:
    """Put each value of ``(N, C, L)`` (or ``(C, L)``) input at its ``max_pool1d`` index in
    a zero output."""
    args = (kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, 1, *args, "max_unpool1d")


def max_unpool2d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Size,
    stride: Optional[Size] = None,
    padding: Size = 0,
    output_size: Optional[Sequence[int]] = None,
) -> Tensor:
    """Put each value of ``(N, C, H, W)`` (or ``(C, H, W)``) input at its ``max_pool2d``
    index in a zero output."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (input,) = float32_operands(input)
    args = (kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, 2, *args, "max_unpool2d")


def max_unpool3d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Size,
    stride: Optional[Size] = None,
    padding: Size = 0,
    output_size: Optional[Sequence[int]] = None,
) -> Tensor:
    """Put each value of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input at its
    ``max_pool3d`` index in a zero output."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (input,) = float32_operands(input)
    args = (kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, 3, *args, "max_unpool3d")
