"""Pooling: ``max_pool1d/2d``, ``avg_pool1d/2d`` and ``adaptive_avg_pool1d/2d``.

Windows are the strided slices of :func:`~tensorweaver.nn.functional.conv._im2col`. The max
is read with ``argmax`` + ``gather``, so its gradient goes to the first maximum of each
window, as in PyTorch. ``ceil_mode`` adds padding at the end that no window counts.
Adaptive pooling multiplies by averaging matrices, one per spatial axis.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import tensorweaver as tw
from tensorweaver.contract.dtypes import DType
from tensorweaver.nn.functional.conv import _batched, _im2col, _ntuple, pad
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.ops.index import gather_unchecked
from tensorweaver.tensor import Tensor


def _lowest(dtype: DType) -> float:
    """The padding that never wins a max."""
    return float("-inf") if dtype.is_floating_point else int(np.iinfo(dtype.numpy_name).min)


def _window_max(
    x: Tensor,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
) -> tuple[Tensor, Tensor]:
    """The max of every window and the (row-major) kernel offset of its first maximum."""
    ph, pw = padding
    windows = _im2col(
        pad(x, (pw, pw, ph, ph), value=_lowest(x.dtype)), kernel, stride, dilation, "max_pool2d"
    )
    first = windows.argmax(dim=2, keepdim=True)
    return gather_unchecked(windows, 2, first).squeeze(2), first.squeeze(2)


def max_pool2d_reference(
    x: Tensor, kernel: tuple[int, int], stride: tuple[int, int], padding: tuple[int, int]
) -> Tensor:
    """Max pooling of ``(N, C, H, W)`` ``x`` padded with -inf (the decomposition of the
    ``max_pool2d`` composite)."""
    return _window_max(x, kernel, stride, padding, (1, 1))[0]


def _out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool, fn: str) -> int:
    """PyTorch's pooled length: with ``ceil_mode`` the last window must start inside the
    input or its left padding."""
    span = d * (k - 1) + 1
    if size + 2 * p < span:
        raise ValueError(
            f"{fn}: the padded input length {size + 2 * p} is shorter than the window {span}"
        )
    out = (size + 2 * p - span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_params(
    x: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None,
    padding: int | Sequence[int],
    dilation: int | Sequence[int],
    ceil_mode: bool,
    fn: str,
) -> tuple[tuple[int, int], ...]:
    """Kernel, stride, padding, dilation as pairs, and the extra (bottom, right) padding
    that ``ceil_mode`` needs."""
    kernel = _ntuple(kernel_size, 2, fn, "kernel_size")
    stride = kernel if stride is None or stride == [] else _ntuple(stride, 2, fn, "stride")
    padding = _ntuple(padding, 2, fn, "padding")
    dilation = _ntuple(dilation, 2, fn, "dilation")
    if min(kernel + stride + dilation) < 1 or any(
        not 0 <= p <= k // 2 for p, k in zip(padding, kernel)
    ):
        raise ValueError(
            f"{fn}: kernel_size {kernel}, stride {stride} and dilation {dilation} must be "
            f"positive and padding {padding} at most half the kernel size"
        )
    extra = []
    for size, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation):
        out = _out_size(size, k, s, p, d, ceil_mode, fn)
        extra.append(max(0, (out - 1) * s + d * (k - 1) + 1 - (size + 2 * p)))
    return kernel, stride, padding, dilation, tuple(extra)


def max_pool2d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """2-D max pooling of ``(N, C, H, W)`` (or ``(C, H, W)``) input; with ``return_indices``
    also the flat ``h * W + w`` input index of each maximum."""
    x, batched = _batched(input, 4, "max_pool2d")
    kernel, stride, padding, dilation, (eh, ew) = _pool_params(
        x, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d"
    )
    h, w = x.shape[2:]
    if eh or ew:
        x = pad(x, (0, ew, 0, eh), value=_lowest(x.dtype))
    if dilation == (1, 1) and not return_indices:
        out = fused_or_reference("max_pool2d", max_pool2d_reference, (x,), kernel, stride, padding)
        return out if batched else out.squeeze(0)
    out, first = _window_max(x, kernel, stride, padding, dilation)
    oh, ow = out.shape[2:]
    kw = kernel[1]
    rows = (tw.arange(oh, device=x.device) * stride[0] - padding[0]).reshape(oh, 1)
    cols = tw.arange(ow, device=x.device) * stride[1] - padding[1]
    indices = (rows + first // kw * dilation[0]) * w + cols + first % kw * dilation[1]
    if not batched:
        out, indices = out.squeeze(0), indices.squeeze(0)
    return (out, indices) if return_indices else out


def max_pool1d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """1-D max pooling of ``(N, C, L)`` (or ``(C, L)``) input: 2-D pooling over a height of one."""
    fn = "max_pool1d"

    def wide(value: int | Sequence[int], name: str, height: int) -> tuple[int, int]:
        return (height, _ntuple(value, 1, fn, name)[0])

    x, batched = _batched(input, 3, fn)
    result = max_pool2d(
        x.unsqueeze(2),
        wide(kernel_size, "kernel_size", 1),
        None if stride is None or stride == [] else wide(stride, "stride", 1),
        wide(padding, "padding", 0),
        wide(dilation, "dilation", 1),
        ceil_mode,
        return_indices,
    )
    parts = result if return_indices else (result,)
    parts = tuple(p.squeeze(2) if batched else p.squeeze(2).squeeze(0) for p in parts)
    return parts if return_indices else parts[0]


def _window_sum(
    x: Tensor,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
    extra: tuple[int, int],
    value: float,
) -> Tensor:
    """Sums of the windows of ``x`` padded with ``value`` around and zeros beyond (ceil_mode)."""
    (ph, pw), (eh, ew) = padding, extra
    xp = pad(pad(x, (pw, pw, ph, ph), value=value), (0, ew, 0, eh))
    return _im2col(xp, kernel, stride, (1, 1), "avg_pool2d").sum(2)


def avg_pool2d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """2-D average pooling of ``(N, C, H, W)`` (or ``(C, H, W)``) input. The divisor counts
    the zero padding when ``count_include_pad``, never the ``ceil_mode`` overhang."""
    x, batched = _batched(input, 4, "avg_pool2d")
    kernel, stride, padding, _, extra = _pool_params(
        x, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d"
    )
    total = _window_sum(x, kernel, stride, padding, extra, 0)
    if divisor_override:
        out = total / divisor_override
    elif not any(extra) and (count_include_pad or not any(padding)):
        out = total / (kernel[0] * kernel[1])
    else:
        ones = tw.ones(1, 1, *x.shape[2:], dtype=x.dtype, device=x.device)
        out = total / _window_sum(ones, kernel, stride, padding, extra, float(count_include_pad))
    return out if batched else out.squeeze(0)


def avg_pool1d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """1-D average pooling of ``(N, C, L)`` (or ``(C, L)``) input."""
    fn = "avg_pool1d"
    x, batched = _batched(input, 3, fn)
    out = avg_pool2d(
        x.unsqueeze(2),
        (1, _ntuple(kernel_size, 1, fn, "kernel_size")[0]),
        None if stride is None or stride == [] else (1, _ntuple(stride, 1, fn, "stride")[0]),
        (0, _ntuple(padding, 1, fn, "padding")[0]),
        ceil_mode,
        count_include_pad,
    ).squeeze(2)
    return out if batched else out.squeeze(0)


def _averaging_matrix(size: int, out: int, like: Tensor) -> Tensor:
    """The ``(out, size)`` matrix whose row i averages PyTorch's adaptive window i:
    ``[floor(i * size / out), ceil((i + 1) * size / out))``."""
    i = tw.arange(out, device=like.device).reshape(out, 1)
    start = i * size // out
    stop = ((i + 1) * size + out - 1) // out
    j = tw.arange(size, device=like.device)
    inside = (j >= start) & (j < stop)
    return inside.to(like.dtype) / (stop - start).to(like.dtype)


def _adaptive_sizes(output_size: int | Sequence[int | None] | None, shape: tuple, fn: str) -> tuple:
    n = len(shape)
    sizes = (
        (output_size,) * n
        if output_size is None or isinstance(output_size, int)
        else tuple(output_size)
    )
    if len(sizes) != n:
        raise ValueError(f"{fn}: output_size must be an int or {n} ints/None, got {output_size!r}")
    sizes = tuple(s if o is None else int(o) for o, s in zip(sizes, shape))
    if min(sizes) < 1 and min(shape) > 0:
        raise ValueError(f"{fn}: output_size must be positive, got {output_size!r}")
    return sizes


def adaptive_avg_pool2d(input: Tensor, output_size: int | Sequence[int | None] | None) -> Tensor:
    """Average pooling of ``(N, C, H, W)`` (or ``(C, H, W)``) input to ``output_size``
    (``None`` keeps that axis), with PyTorch's window boundaries."""
    if input.dim() not in (3, 4):
        raise ValueError(
            f"adaptive_avg_pool2d: expected a 3-D or 4-D input, got shape {tuple(input.shape)}"
        )
    h, w = input.shape[-2:]
    oh, ow = _adaptive_sizes(output_size, (h, w), "adaptive_avg_pool2d")
    return _averaging_matrix(h, oh, input) @ input @ _averaging_matrix(w, ow, input).mT


def adaptive_avg_pool1d(input: Tensor, output_size: int | Sequence[int]) -> Tensor:
    """Average pooling of ``(N, C, L)`` (or ``(C, L)``) input to length ``output_size``."""
    if input.dim() not in (2, 3):
        raise ValueError(
            f"adaptive_avg_pool1d: expected a 2-D or 3-D input, got shape {tuple(input.shape)}"
        )
    (size,) = _adaptive_sizes(output_size, input.shape[-1:], "adaptive_avg_pool1d")
    return input @ _averaging_matrix(input.shape[-1], size, input).mT
