"""``tw.histogram`` and ``tw.histogramdd``: counts (or summed weights, or densities) of a
float tensor's values in bins given by their number or by their edges.

A value falls in bin ``i`` when ``edges[i] <= value < edges[i + 1]``; the last bin also
holds its right edge; values outside the edges, and NaN, count nowhere. Given a number of
bins, the edges are evenly spaced over ``range`` (default: the values' min and max, widened
by 0.5 both ways where those agree, and [0, 1] for no values). As in PyTorch, there is no
gradient.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tensorweaver import return_types
from tensorweaver.contract import dtypes
from tensorweaver.ops import coordinates as co
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops.order_stats import NO_DERIVATIVE, no_derivative, searchsorted
from tensorweaver.ops.sort import check_flags
from tensorweaver.tensor import Tensor


def _outer_edges(
    column: Tensor, bounds: Sequence[float] | None, d: int, fn: str
) -> tuple[float, float]:
    if bounds is not None:
        low, high = float(bounds[0]), float(bounds[1])
    elif column.numel():
        low, high = float(column.min().item()), float(column.max().item())
    else:
        low, high = 0.0, 1.0
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(
            f"{fn}: dimension {d}'s range [{low}, {high}] is not finite; pass a finite "
            "range= or remove NaN and infinite values"
        )
    if low > high:
        raise RuntimeError(f"{fn}: min should not exceed max, but got min {low} max {high}")
    return (low - 0.5, high + 0.5) if low == high else (low, high)


#: The input dtypes PyTorch's CPU kernels take: to find the data's range, and to count.
RANGE_DTYPES = (dtypes.float32, dtypes.float64)
COUNT_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


def _check_dtypes(
    points: Tensor, per_dim: list, range: Any, weight: Tensor | None, fn: str
) -> None:
    """PyTorch's checks of the dtypes, in its order: a kernel for the data's range (bin
    counts without ``range`` of some points), edges and a weight of the input's dtype, a
    kernel to count."""
    by_edges = any(isinstance(b, Tensor) for b in per_dim)
    if not by_edges and range is None and points.shape[0] and points.dtype not in RANGE_DTYPES:
        raise NotImplementedError(
            f"{fn} is not implemented for {points.dtype.name} input without range=; convert "
            "it with .float() or .double(), or pass range="
        )
    for d, bins in enumerate(per_dim):
        if not isinstance(bins, Tensor):
            continue
        if bins.ndim != 1:
            raise RuntimeError(
                f"{fn}: bins tensor should have one dimension, got shape {tuple(bins.shape)} "
                f"for dimension {d}"
            )
        if bins.dtype is not points.dtype:
            raise RuntimeError(
                f"{fn}: input tensor and bins tensors should have the same dtype, but got "
                f"input {points.dtype.name} and bins {bins.dtype.name} for dimension {d}"
            )
    for d, bins in enumerate(per_dim):  # (after the dtypes, as PyTorch)
        if isinstance(bins, Tensor) and bins.numel() < 2:
            raise RuntimeError(
                f"{fn}: bins must be > 0, but got {max(bins.numel() - 1, 0)} for dimension "
                f"{d}; give at least two bin edges"
            )
    if weight is not None and weight.dtype is not points.dtype:
        raise RuntimeError(
            f"{fn}: if weight tensor is provided, input tensor and weight tensor should have "
            f"the same dtype, but got input {points.dtype.name} and weight {weight.dtype.name}"
        )
    if points.dtype not in COUNT_DTYPES:
        raise NotImplementedError(
            f"{fn} is not implemented for {points.dtype.name} input; convert it with .float() "
            "or .double()"
        )


def _edges(column: Tensor, bins: Any, bounds: Any, d: int, fn: str) -> Tensor:
    if isinstance(bins, Tensor):
        return bins.detach()
    if isinstance(bins, bool) or not isinstance(bins, int):
        raise TypeError(f"{fn}: bins must be an int or a 1-d tensor of edges, got {bins!r}")
    if bins <= 0:
        raise RuntimeError(f"{fn}: bins must be > 0, but got {bins} for dimension {d}")
    low, high = _outer_edges(column, bounds, d, fn)
    return cr.linspace(low, high, bins + 1, dtype=column.dtype, device=column.device)


def _histogramdd(
    input: Tensor, bins: Any, range: Any, weight: Tensor | None, density: bool, fn: str
) -> tuple[Tensor, list[Tensor]]:
    check_flags(fn[:-2], density=density)
    dims = input.shape[-1] if input.ndim else 1
    points = mv.reshape(input.detach(), (-1, dims))
    per_dim = list(bins) if isinstance(bins, (list, tuple)) else [bins] * dims
    _check_dtypes(points, per_dim, range, weight, fn)
    if len(per_dim) != dims:
        raise RuntimeError(
            f"{fn}: expected {dims} sequences of bin edges or bin counts for input of shape "
            f"{tuple(input.shape)}, got {len(per_dim)}"
        )
    if range is not None and len(range) != 2 * dims:
        raise RuntimeError(f"{fn}: expected {2 * dims} range values, got {len(range)}")
    if weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError(
            f"{fn}: if weight tensor is provided it should have the same shape as the input "
            f"tensor excluding its innermost dimension, but got input with shape "
            f"{tuple(input.shape)} and weight with shape {tuple(weight.shape)}"
        )
    columns = mv.unbind(points, 1)
    edges = [
        _edges(c, b, None if range is None else range[2 * d : 2 * d + 2], d, fn)
        for d, (c, b) in enumerate(zip(columns, per_dim))
    ]
    counts = [e.numel() - 1 for e in edges]
    flat = cr.zeros(points.shape[0], dtype=dtypes.int64, device=input.device)
    inside = cr.ones(points.shape[0], dtype=dtypes.bool_, device=input.device)
    for c, e, n in zip(columns, edges, counts):
        last = e[-1]
        inside = inside & (c >= e[0]) & (c <= last)
        at = searchsorted(e, c, right=True) - 1
        at = co.where(c == last, n - 1, at).clamp(0, max(n - 1, 0))
        flat = flat * n + at
    w = cr.ones(points.shape[0], dtype=input.dtype, device=input.device)
    if weight is not None:
        w = mv.reshape(weight.detach(), (-1,))
    w = co.where(inside, w, 0.0)
    total = math.prod(counts)
    hist = cr.zeros(total, dtype=input.dtype, device=input.device)
    if total and points.shape[0]:
        hist = hist.index_add(0, co.where(inside, flat, 0), w)
    hist = mv.reshape(hist, tuple(counts))
    if density:
        volume = None
        for d, e in enumerate(edges):
            width = mv.reshape(e[1:] - e[:-1], (-1,) + (1,) * (dims - 1 - d))
            volume = width if volume is None else volume * width
        hist = ew.div(hist, ew.mul(volume, hist.sum()))
    return hist, edges


def histogram(
    input: Tensor,
    bins: int | Tensor = 100,
    *,
    range: Sequence[float] | None = None,
    weight: Tensor | None = None,
    density: bool = False,
) -> Any:
    """``(hist, bin_edges)`` of the values of the float tensor ``input`` (all of them, as
    one flat sample)."""
    if isinstance(bins, Tensor) and range is not None:  # PyTorch's overloads
        raise TypeError(
            "histogram() received an invalid combination of arguments: range= goes with a "
            "number of bins, not with a tensor of bin edges"
        )
    if weight is not None and weight.numel() == input.numel():  # any shape, as PyTorch
        weight = mv.reshape(weight, (-1,))  # (else the shape error names both shapes)
    flat = mv.reshape(input, (-1, 1))
    hist, edges = _histogramdd(flat, [bins], range, weight, density, "torch.histogram()")
    error = RuntimeError(NO_DERIVATIVE.format("histogram"))
    return return_types.histogram(*no_derivative((hist, edges[0]), (input, bins, weight), error))


def histogramdd(
    input: Tensor,
    bins: int | Sequence[int] | Sequence[Tensor] = 10,
    *,
    range: Sequence[float] | None = None,
    weight: Tensor | None = None,
    density: bool = False,
) -> Any:
    """``(hist, bin_edges)`` of the points ``input[..., :]`` (its last dimension: their
    coordinates); ``bin_edges`` a tuple of one 1-d tensor per coordinate."""
    if input.ndim < 2:
        raise RuntimeError(
            "torch.histogramdd: input tensor should have at least 2 dimensions (points along "
            f"the last), got shape {tuple(input.shape)}"
        )
    hist, edges = _histogramdd(input, bins, range, weight, density, "torch.histogramdd()")
    given = (input, weight, *(bins if isinstance(bins, (list, tuple)) else [bins]))
    error = RuntimeError(NO_DERIVATIVE.format("_histogramdd_from_bin_cts"))
    hist, *edges = no_derivative((hist, *edges), given, error)
    return return_types.histogramdd(hist, tuple(edges))
