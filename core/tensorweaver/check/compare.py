"""Comparing a backend's results with NumPy float64 references: differences and tolerances.

A difference is ``|got - want| / max(1, |want|)``: relative for large values, absolute for
small ones, so one tolerance per dtype fits every op. For a layer or a gradient the
denominator is the largest ``|want|`` of the whole array instead (``scale``), since
rounding errors there scale with the array, not with each element. NaN must meet NaN and
an infinity the same infinity; anything else non-finite is an infinite difference.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorweaver.check.case import Measure
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

INF = float("inf")

#: One primitive's rounding: a few units in the last place of each float dtype.
PRIMITIVE_TOLERANCE = {d.float16: 2e-3, d.bfloat16: 1.6e-2, d.float32: 2e-6, d.float64: 1e-12}
#: A whole computation (layer, gradient, composite): many roundings, different orders.
MODEL_TOLERANCE = {d.float16: 3e-2, d.bfloat16: 2e-1, d.float32: 2e-4, d.float64: 1e-9}


def host_dtype(dtype: DType) -> np.dtype:
    """The NumPy dtype ``dtype`` travels as (bfloat16 as float32)."""
    return np.dtype(dtype.numpy_name)


def _round_bfloat16(values: np.ndarray) -> np.ndarray:
    # float32 bits rounded to their top 16 (nearest, ties to even): bfloat16's values.
    f = np.asarray(values, np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    top = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = top.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f), f, out)


def to_dtype(values: Any, dtype: DType) -> np.ndarray:
    """``values`` rounded to ``dtype``, as the host array the backend exchanges for it."""
    with np.errstate(all="ignore"):
        if dtype is d.bfloat16:
            return _round_bfloat16(np.asarray(values, np.float64))
        return np.asarray(values).astype(host_dtype(dtype))


def widen(a: np.ndarray) -> np.ndarray:
    """``a`` for a reference computation: floats as float64, integers as int64."""
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    return a.astype(np.int64) if a.dtype.kind in "iu" else a


def _index(flags: np.ndarray) -> tuple[int, ...]:
    """The index of the largest (or first true) element of ``flags``."""
    return tuple(int(i) for i in np.unravel_index(np.argmax(flags), flags.shape))


def _at(
    what: str,
    difference: float,
    tolerance: float,
    index: tuple[int, ...],
    got: np.ndarray,
    want: np.ndarray,
) -> Measure:
    detail = f"at {index} got {got[index]}, expected {want[index]}"
    return Measure(what, difference, tolerance, detail, index)


def measure(
    what: str,
    got: np.ndarray,
    want: Any,
    dtype: DType,
    tolerance: float | None = None,
    scale: float | None = None,
    mask: np.ndarray | None = None,
) -> Measure:
    """How far ``got`` (a host result of ``dtype``) is from ``want`` (exact, float64).

    ``want`` is rounded to ``dtype`` first, so where the dtype overflows, inf is right.
    ``scale`` replaces the per-element denominator; ``mask`` limits the comparison to the
    elements where the reference is defined.
    """
    want = np.asarray(want)
    if tolerance is None:
        tolerance = PRIMITIVE_TOLERANCE.get(dtype, 0.0)
    if got.shape != want.shape:
        return Measure(what, INF, tolerance, f"result shape {got.shape}, expected {want.shape}")
    if mask is not None:
        got, want = got[mask], want[mask]
    if not dtype.is_floating_point:
        return _exact(what, got, want.astype(got.dtype), tolerance)
    w = to_dtype(want, dtype).astype(np.float64)
    g = got.astype(np.float64)
    wrong = (np.isnan(g) != np.isnan(w)) | ((np.isinf(g) | np.isinf(w)) & (g != w))
    if wrong.any():
        return _at(what, INF, tolerance, _index(wrong), g, w)
    finite = np.isfinite(w)
    if not finite.any():
        return Measure(what, 0.0, tolerance, "no finite values")
    with np.errstate(all="ignore"):
        denominator = np.maximum(1.0, np.abs(w)) if scale is None else max(1.0, scale)
        diff = np.where(finite, np.abs(g - w) / denominator, 0.0)
    i = _index(diff)
    return _at(what, float(diff[i]), tolerance, i, g, w)


def _exact(what: str, got: np.ndarray, want: np.ndarray, tolerance: float) -> Measure:
    wrong = got != want
    if not wrong.any():
        return Measure(what, 0.0, tolerance, "exact")
    return _at(what, INF, tolerance, _index(wrong), got, want)


def measure_array(
    what: str, got: np.ndarray, want: np.ndarray, dtype: DType, tolerance: float | None = None
) -> Measure:
    """``measure`` for a layer output or a gradient, scaled by the largest ``|want|``."""
    finite = np.abs(want[np.isfinite(want)])
    scale = float(finite.max()) if finite.size else 1.0
    if tolerance is None:
        tolerance = MODEL_TOLERANCE[dtype]
    # No rounding to dtype: the reference is float64 and the whole computation ran in dtype.
    return measure(what, got, want, d.float64, tolerance, scale)
