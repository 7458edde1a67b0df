"""Adaptive pooling in 1, 2 and 3 dimensions: ``adaptive_avg_pool*d`` and
``adaptive_max_pool*d``.

Output cell ``i`` of an axis of length ``size`` pooled to ``out`` covers PyTorch's window
``[floor(i * size / out), ceil((i + 1) * size / out))``. Averages multiply by one averaging
matrix per axis; maxima gather every window through a 2-D table of flat input positions
(few dimensions: cuPyNumeric holds at most 6), each axis's windows padded to the longest by
repeating their last element (which changes neither the max nor the first maximum).
Both are composites a backend may fuse (``adaptive_avg_pool``, ``adaptive_max_pool``); the
indices ``return_indices`` asks for always come from the decomposition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional, Union

import tensorweaver as tw
from tensorweaver.autograd.names import composite_name
from tensorweaver.autograd.node import saves_integer_output
from tensorweaver.nn.functional.conv import kernel_layout
from tensorweaver.nn.functional.pooling import autocast_pool_input, line_layout, window_table
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.ops.fusion import fused_kernel
from tensorweaver.ops.index import gather_unchecked
from tensorweaver.tensor import Tensor

#: Half dtypes, computed in float32 (a module constant: this check is on a per-layer path).
_HALF = (tw.float16, tw.bfloat16)

OutputSize = Union[int, None, Sequence[Optional[int]]]


def _bounds(size: int, out: int, like: Tensor) -> tuple[Tensor, Tensor]:
    """The ``(out, 1)`` starts and stops of the adaptive windows of one axis."""
    i = tw.arange(out, device=like.device).reshape(out, 1)
    return i * size // out, ((i + 1) * size + out - 1) // out


def _averaging_matrix(size: int, out: int, like: Tensor) -> Tensor:
    """The ``(out, size)`` matrix whose row i averages adaptive window i."""
    start, stop = _bounds(size, out, like)
    j = tw.arange(size, device=like.device)
    inside = (j >= start) & (j < stop)
    return inside.to(like.dtype) / (stop - start).to(like.dtype)


def _spatial(input: Tensor, nd: int, output_size: OutputSize, fn: str) -> tuple[int, ...]:
    """The output's spatial sizes (``None`` keeps that axis) for ``nd``-D pooling of an
    unbatched or batched ``input``."""
    listed = nd > 1 and not (output_size is None or isinstance(output_size, int))
    if listed and input.dim() <= len(output_size):  # PyTorch's Python check, made first
        raise ValueError(
            f"{fn}: Input dimension should be at least {len(output_size) + 1}, got shape "
            f"{tuple(input.shape)} for output_size {tuple(output_size)}"
        )
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{fn}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input, got shape "
            f"{tuple(input.shape)}"
        )
    shape = tuple(input.shape[-nd:])
    sizes = (
        (output_size,) * nd
        if output_size is None or isinstance(output_size, int)
        else tuple(output_size)
    )
    if len(sizes) != nd:
        raise RuntimeError(
            f"{fn}: output_size must be an int or {nd} ints/None, got {output_size!r}"
        )
    if nd == 1 and None in sizes:  # PyTorch's 1-D signature takes ints only
        raise TypeError(f"{fn}: output_size must be an int (not None), got {output_size!r}")
    sizes = tuple(s if o is None else int(o) for o, s in zip(sizes, shape))
    if min(sizes) < 0:
        raise RuntimeError(f"{fn}: output_size must be zero or positive, got {output_size!r}")
    _refuse_empty(input, nd, sizes, fn)  # (before the dtype, as PyTorch's shape checks)
    # PyTorch has no integer or complex kernels; an average to all ones is its mean() (whose
    # error for integers is a RuntimeError, and which takes complex input)
    if not input.dtype.is_floating_point and not _is_mean(fn, sizes):
        raise NotImplementedError(
            f"{fn}: not implemented for {input.dtype} input; convert it with .float()"
        )
    return sizes


def _refuse_empty(input: Tensor, nd: int, sizes: tuple[int, ...], fn: str) -> None:
    """PyTorch's check of empty axes: the max pools refuse any empty axis but the first
    (the batch, or an unbatched input's channels); the average pools only where the output
    is not all ones (that one is a mean), over the spatial axes in 1-D and 2-D and every
    axis but the first in 3-D."""
    averaging = "avg" in fn
    if _is_mean(fn, sizes):
        return
    start = input.dim() - nd if averaging and nd < 3 else 1
    for axis in range(start, input.dim()):
        if input.shape[axis] == 0:
            raise RuntimeError(
                f"{fn}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(input.shape)} with dimension {axis} being empty"
            )


def _is_mean(fn: str, sizes: tuple[int, ...]) -> bool:
    """Whether PyTorch computes this pool as a mean: an average to an output of ones."""
    return "avg" in fn and all(s == 1 for s in sizes)


def _fusable(input: Tensor, sizes: tuple[int, ...]) -> bool:
    """Whether the composite applies: float input, and no empty output (torch's kernels
    refuse some of those)."""
    return input.dtype.is_floating_point and min(sizes) > 0


def _adaptive_avg(input: Tensor, nd: int, output_size: OutputSize, fn: str) -> Tensor:
    sizes = _spatial(input, nd, output_size, fn)
    if 0 in input.shape[-nd:] or not input.dtype.is_floating_point:
        # (an output of ones, which _spatial let through: PyTorch's mean, NaN of nothing)
        return input.mean(tuple(range(-nd, 0)), keepdim=True)
    if input.dtype in _HALF and fused_kernel(input.backend, "adaptive_avg_pool") is None:
        # The reference sums in float32, rounded once, as torch; a backend's own kernel
        # (torch's) is left as it is.
        return _adaptive_avg(input.float(), nd, sizes, fn).to(input.dtype)
    if _fusable(input, sizes):
        out = fused_or_reference("adaptive_avg_pool", adaptive_avg_pool_reference, (input,), sizes)
    else:
        out = adaptive_avg_pool_reference(input, sizes)
    return _layout(out, input, nd)


def _layout(out: Tensor, input: Tensor, nd: int) -> Tensor:
    """``out``, a new result for ``input``, laid out as torch's adaptive pools lay theirs out:
    as its 2-D kernels (channels-last where a batched input suggests it), which its 1-D pools
    run as over a height of one; its 3-D ones' C order as the plugins' kernels give it."""
    if nd == 3 or input.dim() != nd + 2:
        return out
    return kernel_layout(out, input) if nd == 2 else line_layout(out, input)


def adaptive_avg_pool_reference(x: Tensor, output_size: tuple[int, ...]) -> Tensor:
    """Adaptive average pooling of the trailing ``len(output_size)`` axes of ``x`` (the
    decomposition of the ``adaptive_avg_pool`` composite)."""
    out = x
    nd = len(output_size)
    for axis, (size, o) in enumerate(zip(x.shape[-nd:], output_size)):
        dim = x.dim() - nd + axis
        matrix = _averaging_matrix(size, o, x)
        out = (out.transpose(dim, -1) @ matrix.mT).transpose(dim, -1)
    return out


def adaptive_avg_pool1d(input: Tensor, output_size: OutputSize) -> Tensor:
    """Average pooling of ``(N, C, L)`` (or ``(C, L)``) input to length ``output_size``."""
    return _adaptive_avg(input, 1, output_size, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Tensor, output_size: OutputSize) -> Tensor:
    """Average pooling of ``(N, C, H, W)`` (or ``(C, H, W)``) input to ``output_size``."""
    return _adaptive_avg(input, 2, output_size, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input: Tensor, output_size: OutputSize) -> Tensor:
    """Average pooling of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input to ``output_size``."""
    input = autocast_pool_input(input, 3)
    return _adaptive_avg(input, 3, output_size, "adaptive_avg_pool3d")


def _adaptive_max(
    input: Tensor, nd: int, output_size: OutputSize, return_indices: bool, fn: str
) -> Tensor | tuple[Tensor, Tensor]:
    sizes = _spatial(input, nd, output_size, fn)
    if not return_indices:
        if _fusable(input, sizes):
            reference = adaptive_max_pool_reference
            out = fused_or_reference("adaptive_max_pool", reference, (input,), sizes)
        else:
            out = adaptive_max_pool_reference(input, sizes)
        return _layout(out, input, nd)
    out, indices = _adaptive_max_with_indices(input, sizes)
    out, indices = _layout(out, input, nd), _layout(indices, input, nd)
    name = composite_name("adaptive_max_pool", (input,), (sizes,))  # as the fused kernel's
    out = labelled(out, name, input)
    saves_integer_output(out, indices)  # (PyTorch's node saves the indices)
    return out, indices


def adaptive_max_pool_reference(x: Tensor, output_size: tuple[int, ...]) -> Tensor:
    """Adaptive max pooling of the trailing ``len(output_size)`` axes of ``x`` (the
    decomposition of the ``adaptive_max_pool`` composite)."""
    return _adaptive_max_with_indices(x, output_size)[0]


def _adaptive_max_with_indices(input: Tensor, sizes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """The maxima and their flat input indices. The indices come from the decomposition
    only: a composite yields one array of the input's dtype."""
    nd = len(sizes)
    lead = input.dim() - nd
    shape = tuple(input.shape[lead:])
    # Every axis's windows padded to the longest by repeating their last position.
    positions = []
    for size, o in zip(shape, sizes):
        start, stop = _bounds(size, o, input)
        width = max((((i + 1) * size + o - 1) // o - i * size // o for i in range(o)), default=1)
        where = start + tw.arange(width, device=input.device)
        positions.append(tw.minimum(where, stop - 1).clamp(min=0))
    table = window_table(positions, shape)
    cells, span = table.shape
    stacked = (
        input.flatten(lead).index_select(lead, table.reshape(-1)).unflatten(lead, (cells, span))
    )
    first = stacked.argmax(dim=-1, keepdim=True)
    out = gather_unchecked(stacked, stacked.dim() - 1, first)
    if bool(out.isnan().any()):
        # PyTorch's CPU kernel takes the first maximum but the last NaN of a window (each
        # NaN replaces the running maximum); argmax stops at the first NaN. Only windows
        # with a NaN pay for the second search.
        last = span - 1 - stacked.flip(-1).argmax(dim=-1, keepdim=True)
        first = tw.where(out.isnan(), last, first)
        out = gather_unchecked(stacked, stacked.dim() - 1, first)
    out = out.squeeze(-1)
    out = out.unflatten(lead, sizes)
    chosen = tw.arange(cells, device=input.device) * span + first.squeeze(-1)
    return out, table.reshape(-1)[chosen].unflatten(lead, sizes)


def adaptive_max_pool1d(
    input: Tensor, output_size: OutputSize, return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling of ``(N, C, L)`` (or ``(C, L)``) input to length ``output_size``; with
    ``return_indices`` also the input position of each maximum."""
    return _adaptive_max(input, 1, output_size, return_indices, "adaptive_max_pool1d")


def adaptive_max_pool2d(
    input: Tensor, output_size: OutputSize, return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling of ``(N, C, H, W)`` (or ``(C, H, W)``) input to ``output_size``; with
    ``return_indices`` also the flat ``h * W + w`` input index of each maximum."""
    return _adaptive_max(input, 2, output_size, return_indices, "adaptive_max_pool2d")


def adaptive_max_pool3d(
    input: Tensor, output_size: OutputSize, return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input to ``output_size``;
    with ``return_indices`` also the flat ``(d * H + h) * W + w`` input index of each max."""
    input = autocast_pool_input(input, 3)
    return _adaptive_max(input, 3, output_size, return_indices, "adaptive_max_pool3d")


def adaptive_max_pool1d_with_indices(
    input: Tensor, output_size: OutputSize, return_indices: bool = False
) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool1d`` returning ``(output, indices)``."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(
    input: Tensor, output_size: OutputSize, return_indices: bool = False
) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool2d`` returning ``(output, indices)``."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(
    input: Tensor, output_size: OutputSize, return_indices: bool = False
) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool3d`` returning ``(output, indices)``."""
    return adaptive_max_pool3d(input, output_size, True)
