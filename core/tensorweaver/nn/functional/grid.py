"""Sampling at arbitrary positions: ``grid_sample`` and the grids of ``affine_grid``.

``grid_sample`` reads each output value from a handful of taps around its (unnormalized)
position, one ``gather`` per tap, weighted by differentiable weights of the position, so
gradients reach both the input and the grid. It is the composite ``grid_sample``: a
backend may fuse it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from itertools import product
from typing import Optional

import numpy as np

import tensorweaver as tw
from tensorweaver.amp import autocast_dtype, float32_operands
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.tensor import Tensor

_MODES = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")
_CUBIC_A = -0.75


def _unnormalize(g: Tensor, size: int, align_corners: bool) -> Tensor:
    """Grid values in [-1, 1] as input positions: -1 and 1 are the centres of the edge
    pixels with ``align_corners``, else their outer edges."""
    if align_corners:
        return (g + 1) / 2 * (size - 1)
    return ((g + 1) * size - 1) / 2


def _reflect(c: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """``c`` reflected by the bounds ``twice_low / 2`` and ``twice_high / 2`` until inside."""
    if twice_low == twice_high:
        return c * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = (c - low).abs()
    extra = c % span
    flips = (c / span).floor()
    return tw.where(flips % 2 == 0, extra + low, span - extra + low)


def _clip(c: Tensor, size: int, rank: int) -> Tensor:
    """``c`` clamped into [0, size - 1]. PyTorch counts the border positions themselves as
    outside (gradient 0 there), where ``clamp`` would pass the gradient through. A NaN
    position goes where PyTorch's CPU kernels put it: the first pixel in 2-D (vector
    max/min), the last in 3-D (``std::max(NaN, 0)`` is NaN, ``std::min(size - 1, NaN)`` is
    ``size - 1``)."""
    inside = (c > 0) & (c < size - 1)
    clamped = c.detach().clamp(0, size - 1).nan_to_num(nan=0 if rank == 2 else size - 1)
    return tw.where(inside, c, clamped)


def _pad_coordinates(
    c: Tensor, size: int, padding_mode: str, align_corners: bool, rank: int
) -> Tensor:
    """Positions outside the input moved inside, as ``padding_mode`` reads them."""
    if padding_mode == "border":
        return _clip(c, size, rank)
    if padding_mode == "reflection":
        twice_low, twice_high = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        return _clip(_reflect(c, twice_low, twice_high), size, rank)
    return c


def _cubic(t: Tensor) -> list[Tensor]:
    """The cubic convolution weights of taps at -1, 0, 1, 2 from ``floor``."""
    a = _CUBIC_A

    def near(x: Tensor) -> Tensor:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Tensor) -> Tensor:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(
    g: Tensor, size: int, mode: str, padding_mode: str, align_corners: bool, rank: int
) -> list[tuple[Tensor, Optional[Tensor]]]:
    """``(position, weight)`` of each tap along one axis (weight None: 1)."""
    c = _unnormalize(g, size, align_corners)
    if mode != "bicubic":
        c = _pad_coordinates(c, size, padding_mode, align_corners, rank)
    if mode == "nearest":
        # A weight of 1 (also at a NaN position) that keeps the grid in the graph: PyTorch
        # gives it a zero gradient.
        return [(c.round().detach(), c.nan_to_num().sign() * 0 + 1)]
    low = c.floor().detach()
    t = c - low
    if mode == "bilinear":
        return [(low, 1 - t), (low + 1, t)]
    # bicubic: each tap's own position is padded, PyTorch's get_value_bounded
    return [
        (_pad_coordinates(low + k, size, padding_mode, align_corners, rank), w)
        for k, w in zip(range(-1, 3), _cubic(t))
    ]


def grid_sample_reference(
    x: Tensor, grid: Tensor, mode: str, padding_mode: str, align_corners: bool
) -> Tensor:
    """``x`` ``(N, C, *in)`` sampled at ``grid`` ``(N, *out, rank)`` (x first): the
    decomposition of the ``grid_sample`` composite."""
    n, c, *size = x.shape
    out = grid.shape[1:-1]
    rank = len(size)
    # Explicit sizes: -1 is ambiguous on an empty batch.
    flat_x = x.reshape(n, c, int(np.prod(size)))
    grid = grid.reshape(n, int(np.prod(out)), rank)
    # Spatial axis a is read from grid component rank - 1 - a (x is the last axis).
    axes = [
        _taps(grid[..., rank - 1 - a], size[a], mode, padding_mode, align_corners, rank)
        for a in range(rank)
    ]
    strides = [int(np.prod(size[a + 1 :])) for a in range(rank)]
    total = None
    for corner in product(*axes):
        where, inside, weight = None, None, None
        for (pos, _), n_a, stride in zip(corner, size, strides):
            ok = (pos >= 0) & (pos <= n_a - 1)
            # (a NaN or infinite position reads pixel 0, masked out below)
            index = tw.where(ok, pos, 0).long() * stride
            where = index if where is None else where + index
            inside = ok if inside is None else inside & ok
        for _, w in corner:
            if w is None:
                continue
            if rank == 3:  # PyTorch's 3-D CPU kernel skips a tap outside, gradients too
                w = tw.where(inside, w, 0.0)
            weight = w if weight is None else weight * w
        picked = flat_x.gather(2, where.unsqueeze(1).expand(n, c, where.shape[1]))
        # PyTorch's 2-D CPU kernel weights the zero read outside: a NaN weight gives NaN
        picked = tw.where(inside.unsqueeze(1), picked, 0.0)
        if weight is not None:
            picked = picked * weight.unsqueeze(1)
        total = picked if total is None else total + picked
    if rank == 3 and padding_mode != "zeros":
        # PyTorch's 3-D CPU backward keeps a NaN position NaN where its forward clipped it
        # (reflection makes an infinite one NaN): such points pass no gradient at all
        lost = grid.isnan() if padding_mode == "border" else ~grid.isfinite()
        lost = lost.any(dim=-1).unsqueeze(1)
        if bool(lost.any()):  # (finite grids, the common case, skip the extra where)
            total = tw.where(lost, total.detach(), total)
    return total.reshape(n, c, *out)


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: Optional[bool] = None,
) -> Tensor:
    """Sample ``(N, C, H, W)`` (or ``(N, C, D, H, W)``) ``input`` at the normalized positions
    ``grid`` ``(N, H_out, W_out, 2)`` (or ``(N, D_out, H_out, W_out, 3)``), each ``(x, y[,
    z])`` in [-1, 1]; ``mode`` bilinear, nearest or bicubic (4-D only), ``padding_mode``
    zeros, border or reflection."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, grid = float32_operands(input, grid)
    if mode not in _MODES:
        raise ValueError(
            f"grid_sample: mode must be 'bilinear', 'nearest' or 'bicubic', got {mode!r}"
        )
    if padding_mode not in _PADDING:
        raise ValueError(
            "grid_sample: padding_mode must be 'zeros', 'border' or 'reflection', got "
            f"{padding_mode!r}"
        )
    align_corners = _default_align_corners(align_corners, "grid_sample")
    shapes = f"input of shape {tuple(input.shape)} and grid of shape {tuple(grid.shape)}"
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(
            f"grid_sample: expected a 4-D or 5-D input and a grid of the same rank, got {shapes}"
        )
    rank = input.dim() - 2
    if grid.shape[-1] != rank or grid.shape[0] != input.shape[0]:
        raise RuntimeError(
            f"grid_sample: expected a grid of shape (N, *out, {rank}) with the input's batch "
            f"size N, got {shapes}"
        )
    if mode == "bicubic" and rank != 2:
        raise RuntimeError(f"grid_sample: bicubic interpolation needs a 4-D input, got {shapes}")
    if not input.dtype.is_floating_point:  # PyTorch has no kernel for it, whatever the grid's
        raise NotImplementedError(
            f"grid_sample: not implemented for {input.dtype.name} input; convert it (and the "
            "grid) to a floating dtype, e.g. .float()"
        )
    if grid.dtype is not input.dtype:
        raise RuntimeError(
            f"grid_sample: expected input and grid of one dtype, got {input.dtype.name} and "
            f"{grid.dtype.name}; convert one with .to(...)"
        )
    if min(input.shape[2:]) <= 0:
        raise RuntimeError(f"grid_sample: the input has an empty spatial axis: {shapes}")
    static = (mode, padding_mode, align_corners)
    if (
        padding_mode != "zeros"
        and tw.is_grad_enabled()
        and (input.requires_grad or grid.requires_grad)
        and not bool(grid.isfinite().all())
    ):
        # torch 2.13's CPU backward of border/reflection padding crashes the process (a
        # segfault) on a NaN or infinite position: no backend's kernel is asked
        return grid_sample_reference(input, grid, *static)
    return fused_or_reference("grid_sample", grid_sample_reference, (input, grid), *static)


def _default_align_corners(align_corners: Optional[bool], name: str) -> bool:
    """``align_corners``, False when not given, with PyTorch's warning about that default."""
    if align_corners is None:
        warnings.warn(
            f"{name}: the default behavior of grid_sample and affine_grid is align_corners=False "
            "(changed in PyTorch 1.3.0); pass align_corners=True for the old behavior, or "
            "align_corners=False to keep this one without the warning",
            UserWarning,
            stacklevel=3,
        )
    return bool(align_corners)


def _steps(n: int, align_corners: bool) -> np.ndarray:
    """The normalized positions of the ``n`` pixel centres along one axis."""
    if n <= 1:
        return np.zeros(max(n, 0))
    steps = np.linspace(-1.0, 1.0, n)
    return steps if align_corners else steps * (n - 1) / n


def _host_base(size: Sequence[int], rank: int) -> np.ndarray:
    """Room on the host for the grid's base positions, ``(*spatial, rank + 1)`` float64,
    taken before anything is filled in: a grid past memory raises at once, as PyTorch's
    does, rather than after filling its axes (minutes for 2**31 positions each)."""
    spatial = tuple(size[2:])
    try:
        return np.empty((*spatial, rank + 1))
    except (MemoryError, ValueError) as exc:  # (NumPy: ValueError past its largest size)
        need = math.prod(spatial) * (rank + 1) * 8
        raise tw.OutOfMemoryError(
            f"affine_grid: the grid for size {tuple(size)} does not fit in memory (its "
            f"positions take {need} bytes on the host); ask for a smaller size"
        ) from exc


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: Optional[bool] = None) -> Tensor:
    """The ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``) grid of ``grid_sample`` positions that the
    affine maps ``theta`` ``(N, 2, 3)`` (or ``(N, 3, 4)``) send each output pixel centre to,
    for an output of ``size`` ``(N, C, H, W)`` (or ``(N, C, D, H, W)``)."""
    align_corners = _default_align_corners(align_corners, "affine_grid")
    size = [int(s) for s in size]
    if len(size) not in (4, 5):
        raise NotImplementedError(
            f"affine_grid: only 4-D and 5-D sizes are supported (2-D and 3-D affine maps), "
            f"got size {tuple(size)}"
        )
    rank = len(size) - 2
    if not theta.dtype.is_floating_point:
        raise ValueError(f"affine_grid: expected theta of a floating dtype, got {theta.dtype.name}")
    if tuple(theta.shape) != (size[0], rank, rank + 1):
        message = (
            f"affine_grid: expected theta of shape ({size[0]}, {rank}, {rank + 1}) for size "
            f"{tuple(size)}, got theta of shape {tuple(theta.shape)}"
        )
        # PyTorch's classes: a wrong matrix shape is a ValueError, a wrong batch size a
        # RuntimeError.
        if tuple(theta.shape[1:]) != (rank, rank + 1):
            raise ValueError(message)
        raise RuntimeError(message)
    if min(size[2:]) <= 0:
        raise ValueError(f"affine_grid: expected a non-empty spatial size, got {tuple(size)}")
    spatial = size[2:]
    if align_corners and 1 in spatial:
        warnings.warn(
            "affine_grid: with align_corners=True an axis of size 1 gets the position 0 (as "
            "in PyTorch since 1.3.0), not -1; this is not an intended use of affine_grid",
            stacklevel=2,
        )
    # (x, y[, z], 1) per output position; x runs along the last axis.
    base = _host_base(size, rank)
    for k in range(rank):
        axis = rank - 1 - k
        shape = [1] * rank
        shape[axis] = spatial[axis]
        base[..., k] = _steps(spatial[axis], align_corners).reshape(shape)
    base[..., rank] = 1.0
    base = tw.tensor(base.reshape(1, -1, rank + 1), dtype=theta.dtype, device=theta.device)
    grid = (base @ theta.transpose(1, 2)).reshape(size[0], *spatial, rank)
    return labelled(grid, "AffineGridGeneratorBackward0", theta)
