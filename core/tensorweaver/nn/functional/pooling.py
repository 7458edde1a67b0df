"""Sliding-window pooling in 1, 2 and 3 dimensions: ``max_pool*d``, ``avg_pool*d`` and
``lp_pool*d``.

One N-d implementation serves every rank. Windows are the strided slices of the padded
input stacked on a new axis (``conv._im2col``); max and average pooling are composites
(``max_pool``, ``avg_pool``, ``max_pool2d`` for the plain 2-d case, and
``max_pool_with_indices`` when ``return_indices`` asks for the indices too) a backend may fuse.
The max is read with ``argmax`` + ``gather``, so its gradient goes to the first maximum of
each window in row-major order, as in PyTorch. ``ceil_mode`` adds padding at the end that
no window counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Union

import numpy as np

import tensorweaver as tw
from tensorweaver.amp import autocast_dtype, float32_operands
from tensorweaver.autograd.names import grad_fn_name
from tensorweaver.autograd.node import saves_integer_output
from tensorweaver.contract.dtypes import DType
from tensorweaver.nn.functional.conv import (
    _batched,
    _im2col,
    _ntuple,
    kernel_layout,
    pad,
)
from tensorweaver.nn.functional.integral import is_integral
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.ops.index import gather_unchecked
from tensorweaver.tensor import Tensor

Size = Union[int, Sequence[int]]


def lowest(dtype: DType) -> float:
    """The padding that never wins a max."""
    return float("-inf") if dtype.is_floating_point else int(np.iinfo(dtype.numpy_name).min)


def pad_widths(before: Sequence[int], after: Sequence[int]) -> list[int]:
    """``F.pad``'s width list (last axis first) for per-axis ``before``/``after`` widths."""
    return [w for b, a in reversed(list(zip(before, after))) for w in (b, a)]


def _window_max(
    x: Tensor,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    fn: str,
) -> tuple[Tensor, Tensor]:
    """The max of every window and the (row-major) kernel offset of the element PyTorch's CPU
    kernels pick: the first maximum, the last NaN of a window that has one, and the first
    element inside the input of a window of -inf (padding cells are never picked)."""
    low = lowest(x.dtype)
    widths = pad_widths(padding, padding)
    stacked = _im2col(pad(x, widths, value=low), kernel, stride, dilation, fn)
    inside = tw.ones_like(x, dtype=tw.uint8, requires_grad=False)
    inside = _im2col(pad(inside, widths, value=0), kernel, stride, dilation, fn).bool()
    values = stacked.detach()
    top = values.amax(dim=2, keepdim=True)
    # (integer windows: argmax of a 0/1 mask is the first position that holds)
    choice = ((values == top) & inside).to(tw.uint8).argmax(dim=2, keepdim=True)
    if x.dtype.is_floating_point:
        nan = values.isnan().to(tw.uint8)
        last_nan = nan.shape[2] - 1 - nan.flip(2).argmax(dim=2, keepdim=True)
        choice = tw.where(nan.amax(dim=2, keepdim=True).bool(), last_nan, choice)
    return gather_unchecked(stacked, 2, choice).squeeze(2), choice.squeeze(2)


def max_pool2d_reference(
    x: Tensor, kernel: tuple[int, int], stride: tuple[int, int], padding: tuple[int, int]
) -> Tensor:
    """Max pooling of ``(N, C, H, W)`` ``x`` padded with -inf (the decomposition of the
    ``max_pool2d`` composite)."""
    return _window_max(x, kernel, stride, padding, (1, 1), "max_pool2d")[0]


def _overhung(x: Tensor, extra: tuple[int, ...], value: float) -> Tensor:
    """``x`` padded with ``value`` by ``extra`` at the end of each spatial axis."""
    return pad(x, pad_widths((0,) * len(extra), extra), value=value) if any(extra) else x


def max_pool_reference(
    x: Tensor,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    ceil_mode: bool,
) -> Tensor:
    """Max pooling of ``(N, C, *spatial)`` ``x`` padded with -inf (the decomposition of the
    ``max_pool`` composite)."""
    extra = _overhang(x, kernel, stride, padding, dilation, ceil_mode, "max_pool")
    xp = _overhung(x, extra, lowest(x.dtype))
    return _window_max(xp, kernel, stride, padding, dilation, "max_pool")[0]


def max_pool_with_indices_reference(
    x: Tensor,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    ceil_mode: bool,
) -> tuple[Tensor, Tensor]:
    """``max_pool_reference`` and the flat (row-major over the spatial axes) input index of
    each window's first maximum (the decomposition of the ``max_pool_with_indices``
    composite)."""
    extra = _overhang(x, kernel, stride, padding, dilation, ceil_mode, "max_pool")
    xp = _overhung(x, extra, lowest(x.dtype))
    out, first = _window_max(xp, kernel, stride, padding, dilation, "max_pool")
    nd = len(kernel)
    starts = [
        (tw.arange(o, device=x.device) * s - p).reshape(o, *([1] * (nd - 1 - axis)))
        for axis, (o, s, p) in enumerate(zip(out.shape[2:], stride, padding))
    ]
    return out, flat_index(first, kernel, starts, dilation, x.shape[2:])


def _out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool, fn: str) -> int:
    """PyTorch's pooled length: with ``ceil_mode`` the last window must start inside the
    input or its left padding."""
    span = d * (k - 1) + 1
    if size + 2 * p < span:
        raise RuntimeError(
            f"{fn}: the padded input length {size + 2 * p} is shorter than the window {span}; "
            "use a larger input, more padding or a smaller kernel"
        )
    out = (size + 2 * p - span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _stride(stride: Size | None, kernel: tuple[int, ...], nd: int, fn: str) -> tuple[int, ...]:
    """``stride`` as ``nd`` ints; None (or an empty list or tuple) means the kernel size."""
    return kernel if stride is None or stride in ([], ()) else _ntuple(stride, nd, fn, "stride")


def _pool_params(
    x: Tensor,
    kernel_size: Size,
    stride: Size | None,
    padding: Size,
    dilation: Size,
    ceil_mode: bool,
    fn: str,
) -> tuple[tuple[int, ...], ...]:
    """Kernel, stride, padding, dilation per spatial axis of the batched ``x``, and the extra
    padding at the end of each axis that ``ceil_mode`` needs."""
    nd = x.dim() - 2
    if 0 in x.shape[1:]:
        # PyTorch allows an empty batch only: no empty channel or spatial axis.
        raise RuntimeError(
            f"{fn}: expected a {nd + 1}-D or {nd + 2}-D (batch mode) input with optional 0 "
            f"dim batch size and non-batch dimensions of positive length, got shape "
            f"{tuple(x.shape)}"
        )
    kernel = _ntuple(kernel_size, nd, fn, "kernel_size")
    stride = _stride(stride, kernel, nd, fn)
    padding = _ntuple(padding, nd, fn, "padding")
    dilation = _ntuple(dilation, nd, fn, "dilation")
    if min(kernel + stride + dilation) < 1 or any(
        not 0 <= p <= k // 2 for p, k in zip(padding, kernel)
    ):
        raise RuntimeError(
            f"{fn}: kernel_size {kernel}, stride {stride} and dilation {dilation} must be "
            f"positive and padding {padding} at most half the kernel size"
        )
    extra = _overhang(x, kernel, stride, padding, dilation, ceil_mode, fn)
    return kernel, stride, padding, dilation, extra


def _overhang(
    x: Tensor,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    ceil_mode: bool,
    fn: str,
) -> tuple[int, ...]:
    """The extra padding at the end of each spatial axis that ``ceil_mode`` needs."""
    extra = []
    for size, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation):
        out = _out_size(size, k, s, p, d, ceil_mode, fn)
        extra.append(max(0, (out - 1) * s + d * (k - 1) + 1 - (size + 2 * p)))
    return tuple(extra)


def flat_index(
    offsets: Tensor,
    kernel: tuple[int, ...],
    starts: Sequence[Tensor],
    dilation: tuple[int, ...],
    sizes: Sequence[int],
) -> Tensor:
    """The flat input index (row-major over ``sizes``) of kernel offset ``offsets`` (row-major
    over ``kernel``) of windows starting at ``starts`` (one broadcastable tensor per axis)."""
    index = None
    for axis, (k, start, d, size) in enumerate(zip(kernel, starts, dilation, sizes)):
        position = start + offsets // math.prod(kernel[axis + 1 :]) % k * d
        index = position if index is None else index * size + position
    return index


def window_table(positions: Sequence[Tensor], sizes: Sequence[int]) -> Tensor:
    """The ``(..., cells, window)`` flat (row-major over ``sizes``) input positions of windows
    placed per axis by ``positions[d]``, ``(..., out_d, width_d)``: cells and window offsets
    both row-major. Built one axis at a time, so it never has more than 5 dimensions."""
    table = positions[0]
    for where, size in zip(positions[1:], sizes[1:]):
        *lead, cells, span = table.shape
        o, w = where.shape[-2:]
        spread = table.reshape(*lead, cells, 1, span, 1) * size
        table = (spread + where.reshape(*lead, 1, o, 1, w)).reshape(*lead, cells * o, span * w)
    return table


def _max_pool(
    input: Tensor,
    nd: int,
    kernel_size: Size,
    stride: Size | None,
    padding: Size,
    dilation: Size,
    ceil_mode: bool,
    return_indices: bool,
    fn: str,
) -> Tensor | tuple[Tensor, Tensor]:
    x, batched = _batched(input, nd + 2, fn)
    kernel, stride, padding, dilation, extra = _pool_params(
        x, kernel_size, stride, padding, dilation, ceil_mode, fn
    )
    integral = is_integral(x.dtype)
    # PyTorch has no bool max pool, nor a 1-D integer one without indices
    if x.dtype is tw.bool or (integral and nd == 1 and not return_indices):
        raise NotImplementedError(
            f"{fn}: not implemented for {x.dtype} input; convert it with .float()"
            + ("" if x.dtype is tw.bool else " (or pass return_indices=True)")
        )
    if not return_indices:
        if nd == 2 and dilation == (1, 1) and not any(extra):
            static: tuple = (kernel, stride, padding)
            out = fused_or_reference("max_pool2d", max_pool2d_reference, (x,), *static)
        elif x.dtype.is_floating_point:
            static = (kernel, stride, padding, dilation, ceil_mode)
            out = fused_or_reference("max_pool", max_pool_reference, (x,), *static)
        else:
            out = max_pool_reference(x, kernel, stride, padding, dilation, ceil_mode)
        # (C order without a channels-last input: torch's 1-d one's too, whatever x's)
        out = kernel_layout(out, *((x,) if batched and nd > 1 else ()))
        return out if batched else _unbatched(out, input)
    static = (kernel, stride, padding, dilation, ceil_mode)
    if x.dtype.is_floating_point:
        out, indices = fused_or_reference(
            "max_pool_with_indices",
            max_pool_with_indices_reference,
            (x,),
            *static,
            extra_dtypes=(tw.int64,),
        )
    else:
        out, indices = max_pool_with_indices_reference(x, *static)
    # (torch's indices are laid out as its values; its 1-D pool is a 2-D one over a height of
    # one, C-ordered for unbatched input)
    operands = (x,) if batched else ()
    out, indices = kernel_layout(out, *operands), kernel_layout(indices, *operands)
    if not batched:
        out, indices = _unbatched(out, input), indices.squeeze(0)
    saves_integer_output(out, indices)  # (PyTorch's node saves the indices)
    return out, indices


def line_layout(out: Tensor, x: Tensor) -> Tensor:
    """``kernel_layout(out, x)`` for a 1-D pool's ``(N, C, L)`` result (adaptive_pooling's
    name for it)."""
    return kernel_layout(out, x)


def _unbatched(out: Tensor, input: Tensor) -> Tensor:
    """A pool's batched ``out`` for the unbatched ``input``, without the batch axis; its node
    keeps the pool's name (PyTorch's n-D pools take unbatched input as it is)."""
    node = out._node
    squeezed = out.squeeze(0)
    return squeezed if node is None else labelled(squeezed, grad_fn_name(node), input)


#: Per rank: the input's layout and what ``return_indices`` gives (for the docstrings).
_LAYOUTS = {
    1: "``(N, C, L)`` (or ``(C, L)``)",
    2: "``(N, C, H, W)`` (or ``(C, H, W)``)",
    3: "``(N, C, D, H, W)`` (or ``(C, D, H, W)``)",
}
_INDICES = {
    1: "the input position",
    2: "the flat ``h * W + w`` input index",
    3: "the flat ``(d * H + h) * W + w`` input index",
}


def autocast_pool_input(input: Tensor, nd: int) -> Tensor:
    """``input`` as PyTorch's autocast hands it to an ``nd``-d pool: the 3-d pools are on its
    CPU float32 list (amp.CPU_FLOAT32)."""
    if nd == 3 and autocast_dtype() is not None:
        (input,) = float32_operands(input)
    return input


def _max_pool_of_rank(nd: int, always_indices: bool) -> Callable[..., Any]:
    """The public ``max_pool{nd}d``, or with ``always_indices`` its ``_with_indices`` twin that
    returns ``(output, indices)`` whatever ``return_indices`` says."""
    name = f"max_pool{nd}d"

    def max_pool(
        input: Tensor,
        kernel_size: Size,
        stride: Size | None = None,
        padding: Size = 0,
        dilation: Size = 1,
        ceil_mode: bool = False,
        return_indices: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]:
        input = autocast_pool_input(input, nd)
        indices = True if always_indices else return_indices
        return _max_pool(
            input, nd, kernel_size, stride, padding, dilation, ceil_mode, indices, name
        )

    if always_indices:
        max_pool.__name__ = max_pool.__qualname__ = f"{name}_with_indices"
        max_pool.__annotations__["return"] = "tuple[Tensor, Tensor]"
        max_pool.__doc__ = (
            f"``{name}`` returning ``(output, indices)`` whatever ``return_indices`` says."
        )
    else:
        max_pool.__name__ = max_pool.__qualname__ = name
        max_pool.__doc__ = (
            f"{nd}-D max pooling of {_LAYOUTS[nd]} input; with ``return_indices`` also "
            f"{_INDICES[nd]} of each maximum."
        )
    return max_pool


max_pool1d = _max_pool_of_rank(1, always_indices=False)
max_pool2d = _max_pool_of_rank(2, always_indices=False)
max_pool3d = _max_pool_of_rank(3, always_indices=False)
max_pool1d_with_indices = _max_pool_of_rank(1, always_indices=True)
max_pool2d_with_indices = _max_pool_of_rank(2, always_indices=True)
max_pool3d_with_indices = _max_pool_of_rank(3, always_indices=True)


def _window_sum(
    x: Tensor,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    extra: tuple[int, ...],
    value: float,
    fn: str,
) -> Tensor:
    """Sums of the windows of ``x`` padded with ``value`` around and zeros beyond (ceil_mode)."""
    xp = _overhung(pad(x, pad_widths(padding, padding), value=value), extra, 0)
    return _im2col(xp, kernel, stride, (1,) * len(kernel), fn).sum(2)


def _avg_pool(
    input: Tensor,
    nd: int,
    kernel_size: Size,
    stride: Size | None,
    padding: Size,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
    fn: str,
) -> Tensor:
    x, batched = _batched(input, nd + 2, fn)
    kernel, stride, padding, _, _ = _pool_params(x, kernel_size, stride, padding, 1, ceil_mode, fn)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{fn}: divisor_override must be non-zero (or None), got 0")
    static = (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    if x.dtype.is_floating_point:
        out = fused_or_reference("avg_pool", avg_pool_reference, (x,), *static)
    elif x.dtype == tw.int64:  # PyTorch's integer average: int64, rounded toward zero
        out = avg_pool_reference(x.double(), *static).trunc().long()
    else:
        raise NotImplementedError(
            f"{fn}: not implemented for {x.dtype} input; convert it with .float() (or .long())"
        )
    if nd == 3:  # (torch's 3-D one is C-ordered, as the plugins' are)
        return out if batched else _unbatched(out, input)
    if not batched:
        return _unbatched(kernel_layout(out) if nd == 2 else out, input)
    return kernel_layout(out, x)


def avg_pool_reference(
    x: Tensor,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
) -> Tensor:
    """Average pooling of ``(N, C, *spatial)`` ``x`` (the decomposition of the ``avg_pool``
    composite)."""
    undilated = (1,) * len(kernel)
    extra = _overhang(x, kernel, stride, padding, undilated, ceil_mode, "avg_pool")
    total = _window_sum(x, kernel, stride, padding, extra, 0, "avg_pool")
    if divisor_override:
        return total / divisor_override
    if not any(extra) and (count_include_pad or not any(padding)):
        return total / math.prod(kernel)
    ones = tw.ones(1, 1, *x.shape[2:], dtype=x.dtype, device=x.device)
    fill = float(count_include_pad)
    return total / _window_sum(ones, kernel, stride, padding, extra, fill, "avg_pool")


def avg_pool1d(
    input: Tensor,
    kernel_size: Size,
    stride: Size | None = None,
    padding: Size = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """1-D average pooling of ``(N, C, L)`` (or ``(C, L)``) input."""
    args = (kernel_size, stride, padding, ceil_mode, count_include_pad, None)
    return _avg_pool(input, 1, *args, "avg_pool1d")


def _avg_pool_of_rank(nd: int) -> Callable[..., Tensor]:
    """The public ``avg_pool{nd}d`` for ranks 2 and 3 (which take ``divisor_override``)."""
    name = f"avg_pool{nd}d"

    def avg_pool(
        input: Tensor,
        kernel_size: Size,
        stride: Size | None = None,
        padding: Size = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> Tensor:
        input = autocast_pool_input(input, nd)
        args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        return _avg_pool(input, nd, *args, name)

    avg_pool.__name__ = avg_pool.__qualname__ = name
    avg_pool.__doc__ = (
        f"{nd}-D average pooling of {_LAYOUTS[nd]} input. The divisor counts the zero padding "
        "when ``count_include_pad``, never the ``ceil_mode`` overhang; ``divisor_override`` "
        "replaces it."
    )
    return avg_pool


avg_pool2d = _avg_pool_of_rank(2)
avg_pool3d = _avg_pool_of_rank(3)


def _lp_pool(
    input: Tensor,
    nd: int,
    norm_type: float,
    kernel_size: Size,
    stride: Size | None,
    ceil_mode: bool,
    fn: str,
) -> Tensor:
    """``(sum over the window of x ** p) ** (1 / p)``, as PyTorch computes it: an average
    times the window size (NaN for a negative sum); for p = +-inf the max (min) of ``|x|``."""
    kernel = _ntuple(kernel_size, nd, fn, "kernel_size")
    if math.isinf(norm_type):
        sign = 1 if norm_type > 0 else -1
        args = (kernel, stride, 0, 1, ceil_mode, False)
        return sign * _max_pool(sign * input.abs(), nd, *args, fn)
    mean = _avg_pool(input.pow(norm_type), nd, kernel, stride, 0, ceil_mode, True, None, fn)
    total = mean * math.prod(kernel)
    # A zero sum gives 0 with a zero gradient, as PyTorch's (no 0 * inf from the root).
    zero = total == 0
    out = tw.where(zero, 0.0, tw.where(zero, 1.0, total).pow(1.0 / norm_type))
    return labelled(out, "PowBackward0", input)  # (PyTorch's last op: the root)


def _lp_pool_of_rank(nd: int) -> Callable[..., Tensor]:
    """The public ``lp_pool{nd}d``."""
    name = f"lp_pool{nd}d"

    def lp_pool(
        input: Tensor,
        norm_type: float,
        kernel_size: Size,
        stride: Size | None = None,
        ceil_mode: bool = False,
    ) -> Tensor:
        return _lp_pool(input, nd, norm_type, kernel_size, stride, ceil_mode, name)

    lp_pool.__name__ = lp_pool.__qualname__ = name
    lp_pool.__doc__ = f"{nd}-D power-average pooling of {_LAYOUTS[nd]} input."
    return lp_pool


lp_pool1d = _lp_pool_of_rank(1)
lp_pool2d = _lp_pool_of_rank(2)
lp_pool3d = _lp_pool_of_rank(3)
