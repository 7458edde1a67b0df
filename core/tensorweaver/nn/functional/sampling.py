"""Resampling: ``interpolate`` (and the deprecated ``upsample*`` aliases).

Every mode is separable: along each spatial axis, output position ``o`` is a weighted sum
of ``K`` input positions (one for nearest, two for linear, four for cubic, a window for
area). The reference decomposition gathers those positions with one ``index_select`` per
axis and sums them with their weights; the tables of positions and weights are computed on
the host, with PyTorch's index arithmetic (float32 for the nearest modes, as its CPU
kernels). ``interpolate`` is the composite ``interpolate``: a backend may fuse it.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence
from typing import Any, Optional, Union

import numpy as np

import tensorweaver as tw
from tensorweaver.autograd.names import composite_name
from tensorweaver.nn.functional.conv import kernel_layout
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.ops.fusion import fused_kernel
from tensorweaver.tensor import Tensor

#: Half dtypes, computed in float32 (a module constant: this check is on a per-layer path).
_HALF = (tw.float16, tw.bfloat16)

#: The interpolating modes and the input rank each needs (``None``: any of 3, 4, 5).
_RANKS = {
    "nearest": None,
    "nearest-exact": None,
    "area": None,
    "linear": 3,
    "bilinear": 4,
    "bicubic": 4,
    "trilinear": 5,
}
_CUBIC_A = -0.75  # PyTorch's bicubic coefficient


def _scale(size: int, out: int, align_corners: bool, scale: Optional[float]) -> float:
    """Input positions per output position, as PyTorch's ``area_pixel_compute_scale``."""
    if align_corners:
        return (size - 1) / (out - 1) if out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else size / out


def _source(
    size: int, out: int, align_corners: bool, scale: Optional[float], cubic: bool
) -> np.ndarray:
    """The (fractional) input position of each output position along one axis."""
    ratio = _scale(size, out, align_corners, scale)
    o = np.arange(out, dtype=np.float64)
    if align_corners:
        return ratio * o
    src = ratio * (o + 0.5) - 0.5
    return src if cubic else np.maximum(src, 0.0)


def _cubic_weights(t: np.ndarray) -> np.ndarray:
    """The four cubic convolution weights of taps at offsets -1, 0, 1, 2 from ``floor``."""
    a = _CUBIC_A

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], 1)


def _antialiased(
    mode: str, size: int, out: int, align_corners: bool, scale: Optional[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Taps and weights of PyTorch's antialiased bilinear (triangle) and bicubic (Keys,
    a = -0.5) filters: when shrinking, the filter widens by the scale, so every input
    position contributes."""
    ratio = _scale(size, out, align_corners, scale)
    half = 1.0 if mode == "bilinear" else 2.0  # the filter's support at scale 1
    support = half * ratio if ratio >= 1.0 else half
    stretch = 1.0 / ratio if ratio >= 1.0 else 1.0
    center = ratio * (np.arange(out) + 0.5)
    start = np.maximum(np.trunc(center - support + 0.5), 0).astype(np.int64)
    stop = np.minimum(np.trunc(center + support + 0.5).astype(np.int64), size)
    width = max(int((stop - start).max()), 1)
    index = start[:, None] + np.arange(width)
    t = np.abs((index - center[:, None] + 0.5) * stretch)
    if mode == "bilinear":
        w = np.maximum(1.0 - t, 0.0)
    else:
        a = -0.5
        near = ((a + 2) * t - (a + 3)) * t * t + 1
        far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
        w = np.where(t < 1.0, near, np.where(t < 2.0, far, 0.0))
    w = np.where(index < stop[:, None], w, 0.0)
    total = w.sum(1, keepdims=True)
    w = np.divide(w, total, out=np.zeros_like(w), where=total != 0)
    return np.minimum(index, size - 1), w


def _table(
    mode: str,
    size: int,
    out: int,
    align_corners: bool,
    scale: Optional[float],
    antialias: bool = False,
    shortcuts: bool = False,
) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """``(indices, weights)`` of shape ``(out, K)`` along one axis; weights None: pick.
    ``shortcuts``: nearest copies when ``out`` is ``size`` and halves the index when it is
    ``2 * size`` whatever the scale factor, as PyTorch's 2-D kernel does (not its 1-D and
    3-D ones)."""
    if out == size and (antialias or mode in ("linear", "bilinear", "trilinear")):
        # PyTorch's separable kernels skip an axis whose size does not change, whatever
        # the scale factor says (its plain bicubic kernel does not)
        return np.arange(out)[:, None], None
    if antialias:
        return _antialiased(mode, size, out, align_corners, scale)
    if mode in ("nearest", "nearest-exact"):
        exact = scale is None or (shortcuts and mode == "nearest")
        if exact and mode == "nearest" and out in (size, 2 * size):
            return (np.arange(out) * size // out)[:, None], None
        ratio = np.float32(1.0 / scale if scale is not None and scale > 0 else size / out)
        offset = np.float32(0.5 if mode == "nearest-exact" else 0.0)
        o = (np.arange(out, dtype=np.float32) + offset) * ratio
        return np.minimum(o.astype(np.int64), size - 1)[:, None], None
    if mode == "area":  # adaptive average pooling's windows
        o = np.arange(out)
        start, end = (o * size) // out, -((-(o + 1) * size) // out)
        width = int((end - start).max()) if out else 1
        index = start[:, None] + np.arange(width)
        inside = index < end[:, None]
        return np.minimum(index, size - 1), inside / (end - start)[:, None]
    cubic = mode == "bicubic"
    src = _source(size, out, align_corners, scale, cubic)
    low = np.floor(src).astype(np.int64)
    if not cubic:  # a scale factor beyond in / out may reach past the last position
        low = np.minimum(low, size - 1)
    t = np.clip(src - low, 0.0, 1.0)
    if cubic:
        index = low[:, None] + np.arange(-1, 3)
        return np.clip(index, 0, size - 1), _cubic_weights(t)
    high = np.minimum(low + 1, size - 1)
    return np.stack([low, high], 1), np.stack([1 - t, t], 1)


def interpolate_reference(
    x: Tensor,
    mode: str,
    size: tuple[int, ...],
    scales: Optional[tuple[float, ...]],
    align_corners: bool,
    antialias: bool,
) -> Tensor:
    """``x`` ``(N, C, *in)`` resampled to ``(N, C, *size)``: the decomposition of the
    ``interpolate`` composite. ``scales`` (or None) are the scale factors the user gave,
    which PyTorch's position arithmetic uses instead of ``in / out``."""
    for axis, out in enumerate(size):
        dim = axis + 2
        n = x.shape[dim]
        scale = None if scales is None else scales[axis]
        index, weights = _table(mode, n, out, align_corners, scale, antialias, len(size) == 2)
        k = index.shape[1]
        picked = x.index_select(dim, tw.tensor(index.reshape(-1), device=x.device))
        if weights is None:
            x = picked
            continue
        shape = list(x.shape)
        shape[dim : dim + 1] = [out, k]
        w = tw.tensor(weights, dtype=x.dtype, device=x.device)
        w = w.reshape(out, k, *(1,) * (x.dim() - dim - 1))
        x = (picked.reshape(shape) * w).sum(dim + 1)
    return x


def _merged_taps(index: np.ndarray, weights: np.ndarray, size: int) -> tuple[np.ndarray, ...]:
    """The taps of one axis with the weights of repeated (edge-clipped) positions summed:
    each row's distinct positions from its first, padded with zero weights."""
    rows = np.arange(len(index))[:, None]
    dense = np.zeros((len(index), size))
    np.add.at(dense, (rows, index), weights)
    first = index.min(1)[:, None]
    span = first + np.arange(int((index.max(1) - first[:, 0]).max()) + 1)
    cols = np.minimum(span, size - 1)
    return cols, np.where(span < size, dense[rows, cols], 0.0)


def _fixed_point(weights: np.ndarray) -> tuple[np.ndarray, int]:
    """``weights`` as integers scaled by ``2 ** bits``, ``bits`` as many as keep the largest
    below ``2 ** 15`` (at most 22), rounded half away from zero: PyTorch's uint8 weights."""
    bits = 0
    while bits < 22 and int(0.5 + weights.max() * (1 << (bits + 1))) < (1 << 15):
        bits += 1
    scaled = weights * (1 << bits)
    return np.trunc(scaled + np.where(scaled < 0, -0.5, 0.5)).astype(np.int64), bits


def _interpolate_uint8(
    x: Tensor,
    mode: str,
    size: tuple[int, ...],
    scales: Optional[tuple[float, ...]],
    align_corners: bool,
    antialias: bool,
) -> Tensor:
    """uint8 bilinear/bicubic as PyTorch's separable integer kernels: the last axis first,
    an axis whose size does not change skipped, each pass in fixed point rounded half up
    and clamped back to 0..255 (the same answers to the last bit)."""
    for axis in reversed(range(len(size))):
        dim, out = axis + 2, size[axis]
        n = x.shape[dim]
        if out == n:
            continue
        scale = None if scales is None else scales[axis]
        index, weights = _merged_taps(*_table(mode, n, out, align_corners, scale, antialias), n)
        fixed, bits = _fixed_point(weights)
        picked = x.index_select(dim, tw.tensor(index.reshape(-1), device=x.device)).long()
        shape = list(x.shape)
        shape[dim : dim + 1] = [out, index.shape[1]]
        w = tw.tensor(fixed, device=x.device).reshape(*fixed.shape, *(1,) * (x.dim() - dim - 1))
        total = (picked.reshape(shape) * w).sum(dim + 1) + (1 << bits >> 1)
        x = (total // (1 << bits)).clamp(0, 255).to(tw.uint8)
    return x


def _per_axis(value: Union[float, Sequence[float]], rank: int, what: str, shape: tuple) -> tuple:
    if isinstance(value, (list, tuple)):
        if len(value) != rank:
            raise ValueError(
                f"interpolate: the input of shape {shape} has {rank} spatial dimensions but "
                f"{what} has {len(value)} entries ({value!r}); give one per spatial dimension"
            )
        return tuple(value)
    return (value,) * rank


def _backward_differs(
    mode: str, antialias: bool, sizes: tuple, out: tuple, scales: tuple[float, ...]
) -> bool:
    """Whether PyTorch's gradient is not its forward's, for a resize by ``scales``: its 1-D
    and 3-D nearest backward takes the copy and halving shortcuts the forward does not, and
    its antialiased backward rescales an axis its forward copies. The decomposition then
    gives every backend the gradient of the forward."""
    if mode == "nearest" and len(sizes) != 2:
        return any(o in (n, 2 * n) for n, o in zip(sizes, out))
    return antialias and any(o == n and s != 1.0 for n, o, s in zip(sizes, out, scales))


def interpolate(
    input: Tensor,
    size: Optional[Union[int, Sequence[int]]] = None,
    scale_factor: Optional[Union[float, Sequence[float]]] = None,
    mode: str = "nearest",
    align_corners: Optional[bool] = None,
    recompute_scale_factor: Optional[bool] = None,
    antialias: bool = False,
) -> Tensor:
    """Resample the spatial axes of an ``(N, C, *spatial)`` input (1 to 3 of them) to
    ``size``, or by ``scale_factor``; ``mode`` is ``nearest``, ``nearest-exact``,
    ``linear`` (3-D input), ``bilinear``/``bicubic`` (4-D; ``antialias`` widens the filter
    when shrinking), ``trilinear`` (5-D) or ``area``."""
    shape = tuple(input.shape)
    if mode not in _RANKS:
        raise NotImplementedError(
            f"interpolate: mode must be one of {', '.join(_RANKS)}, got {mode!r}"
        )
    if mode in ("nearest", "nearest-exact", "area"):
        if align_corners is not None:
            raise ValueError(
                "interpolate: align_corners option can only be set with the interpolating "
                "modes: linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    if input.dim() not in (3, 4, 5):
        raise NotImplementedError(
            f"interpolate: only 3-D, 4-D and 5-D (N, C, *spatial) inputs are supported, got "
            f"shape {shape}"
        )
    needed = _RANKS[mode]
    if needed is not None and input.dim() != needed:
        raise NotImplementedError(
            f"interpolate: got {input.dim()}D input, but {mode} mode needs {needed}D input"
        )
    if not input.dtype.is_floating_point and not (
        input.dtype == tw.uint8 and mode in ("nearest", "nearest-exact", "bilinear", "bicubic")
    ):  # PyTorch's only integer kernels: uint8 nearest, bilinear and bicubic
        raise NotImplementedError(
            f"interpolate: mode {mode!r} is not implemented for {input.dtype} input; convert "
            "it with .float()"
        )
    rank = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("interpolate: only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("interpolate: either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError(
            "interpolate: recompute_scale_factor is not meaningful with an explicit size"
        )
    if antialias and not (mode in ("bilinear", "bicubic") and input.dim() == 4):
        raise ValueError(
            "interpolate: the anti-alias option is restricted to bilinear and bicubic modes "
            f"and requires a 4-D input, got mode {mode!r} and input of shape {shape}"
        )
    scales: Optional[tuple[float, ...]] = None
    if size is not None:
        out = tuple(_size_int(n, size) for n in _per_axis(size, rank, "size", shape))
    else:
        factors = tuple(float(s) for s in _per_axis(scale_factor, rank, "scale_factor", shape))
        out = tuple(math.floor(n * s) for n, s in zip(shape[2:], factors))
        # area always recomputes the scale from the sizes, as PyTorch does
        if not recompute_scale_factor and mode != "area":
            scales = factors
    if min(out) <= 0:
        raise RuntimeError(
            f"interpolate: the output of the input of shape {shape} would have spatial size "
            f"{out}; every output size must be positive"
        )
    if min(shape[2:]) <= 0 or (shape[1] == 0 and mode != "area"):
        raise RuntimeError(
            f"interpolate: the input of shape {shape} is empty beyond its batch axis; "
            "PyTorch's kernels need a non-empty (C, *spatial) part"
        )
    if input.dtype == tw.uint8 and mode in ("bilinear", "bicubic"):
        y = _interpolate_uint8(input, mode, out, scales, align_corners, bool(antialias))
        return _input_layout(y, input, mode)
    if input.dtype in _HALF and mode not in ("nearest", "nearest-exact"):
        if antialias and input.device.kind == "cpu":  # PyTorch's CPU kernel has none
            kernel = "Half" if input.dtype is tw.float16 else "BFloat16"
            raise NotImplementedError(
                f"interpolate: \"compute_index_ranges_weights\" not implemented for '{kernel}': "
                f"PyTorch has no antialiased {mode} resampling of {input.dtype.name} on the "
                "CPU; convert with .float()"
            )
        if fused_kernel(input.backend, "interpolate") is None:
            # The reference's weighted sums in float32, rounded once, nearer PyTorch's CPU
            # kernels than half sums; a backend's own kernel (torch's) is left as it is.
            y = _resample(input.float(), mode, out, scales, align_corners, bool(antialias))
            y = _named(y.to(input.dtype), input, mode, bool(antialias))
            return _input_layout(y, input, mode)
    y = _resample(input, mode, out, scales, align_corners, bool(antialias))
    return _input_layout(y, input, mode)


def _input_layout(y: Tensor, x: Tensor, mode: str) -> Tensor:
    """``y``, resampled from ``x``, laid out as PyTorch's kernels lay theirs out:
    channels-last where a 4-d input's strides (or a 5-d one's, but for area's adaptive pool)
    suggest it, else C order."""
    keeps = x.dim() == 4 or (x.dim() == 5 and mode != "area")
    return kernel_layout(y, *((x,) if keeps else ()))


def _size_int(n: Any, size: Any) -> int:
    """One output size as an int: PyTorch's signature refuses floats (TypeError)."""
    try:
        return operator.index(n)
    except TypeError:
        raise TypeError(f"interpolate: size must be an int or ints, got {size!r}") from None


def _named(y: Tensor, x: Tensor, mode: str, antialias: bool) -> Tensor:
    """``y``, resampled from ``x`` by the decomposition, its node named as the fused
    composite's (PyTorch's kernel for ``mode``)."""
    return labelled(y, composite_name("interpolate", (x,), (mode, None, None, None, antialias)), x)


def _resample(
    x: Tensor,
    mode: str,
    out: tuple[int, ...],
    scales: Optional[tuple[float, ...]],
    align_corners: Optional[bool],
    antialias: bool,
) -> Tensor:
    """``x`` resampled to spatial size ``out`` (the arguments checked by interpolate)."""
    shape = tuple(x.shape)
    if antialias and 1 in (shape[-1], out[-1]) and out[-2] != shape[-2]:
        # PyTorch 2.13's antialiased kernel resizes the height wrongly when the width is 1
        # before or after (its answer differs from its own transposed one): decompose.
        y = interpolate_reference(x, mode, out, scales, align_corners, True)
        return _named(y, x, mode, antialias)
    if scales is not None and _backward_differs(mode, antialias, shape[2:], out, scales):
        y = interpolate_reference(x, mode, out, scales, align_corners, antialias)
        return _named(y, x, mode, antialias)
    return fused_or_reference(
        "interpolate", interpolate_reference, (x,), mode, out, scales, align_corners, antialias
    )


def upsample(
    input: Tensor,
    size: Optional[Union[int, Sequence[int]]] = None,
    scale_factor: Optional[Union[float, Sequence[float]]] = None,
    mode: str = "nearest",
    align_corners: Optional[bool] = None,
) -> Tensor:
    """Deprecated alias of :func:`interpolate`."""
    warnings.warn(
        "nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(
    input: Tensor,
    size: Optional[Union[int, Sequence[int]]] = None,
    scale_factor: Optional[Union[float, Sequence[float]]] = None,
) -> Tensor:
    """Deprecated: :func:`interpolate` with ``mode='nearest'``."""
    warnings.warn(
        "nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(
    input: Tensor,
    size: Optional[Union[int, Sequence[int]]] = None,
    scale_factor: Optional[Union[float, Sequence[float]]] = None,
) -> Tensor:
    """Deprecated: :func:`interpolate` with ``mode='bilinear'`` and ``align_corners=True``."""
    warnings.warn(
        "nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
