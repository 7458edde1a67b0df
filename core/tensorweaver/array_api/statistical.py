"""Statistical functions: reductions with the standard's ``axis``/``keepdims``/``dtype``."""

from __future__ import annotations

import builtins
from typing import Optional, Union

import tensorweaver as tw
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops.reduce import product
from tensorweaver.tensor import Tensor

Axis = Union[int, tuple, None]


def axes_of(x: Tensor, axis: Axis) -> tuple:
    """``axis`` as a tuple of non-negative axes (None: all of them)."""
    if axis is None:
        return tuple(range(x.ndim))
    if isinstance(axis, int):
        axis = (axis,)
    out = []
    for a in axis:
        if not -x.ndim <= a < builtins.max(x.ndim, 1):
            raise IndexError(f"axis {a} is out of range for an array of shape {tuple(x.shape)}")
        out.append(a % builtins.max(x.ndim, 1))
    return tuple(out)


def _reduce(name: str, x: Tensor, axis: Axis, keepdims: bool, **kw) -> Tensor:
    axes = axes_of(x, axis)
    if not axes or x.ndim == 0:  # the core reads dim=() as "every axis"
        out = x.clone()
        dtype = kw.get("dtype")
        return out if dtype is None else out.to(dtype)
    reduction = product if name == "prod" else getattr(tw, name)  # tw.prod takes one dim
    return reduction(x, dim=axes, keepdim=keepdims, **kw)


def max(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The largest element along ``axis``."""
    return _reduce("amax", x, axis, keepdims)


def min(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The smallest element along ``axis``."""
    return _reduce("amin", x, axis, keepdims)


def mean(x: Tensor, /, *, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """The arithmetic mean along ``axis``."""
    return _reduce("mean", x, axis, keepdims)


def sum(  # noqa: A001
    x: Tensor, /, *, axis: Axis = None, dtype: Optional[DType] = None, keepdims: bool = False
) -> Tensor:
    """The sum along ``axis`` (integers in the default integer dtype unless ``dtype``)."""
    return _reduce("sum", x, axis, keepdims, dtype=_accumulator(x, dtype))


def prod(
    x: Tensor, /, *, axis: Axis = None, dtype: Optional[DType] = None, keepdims: bool = False
) -> Tensor:
    """The product along ``axis`` (integers in the default integer dtype unless ``dtype``)."""
    return _reduce("prod", x, axis, keepdims, dtype=_accumulator(x, dtype))


def _accumulator(x: Tensor, dtype: Optional[DType]) -> Optional[DType]:
    if dtype is None and x.dtype.kind in "biu":
        return tw.int64  # the standard's default integer dtype (uint64 does not exist here)
    return dtype


def std(
    x: Tensor,
    /,
    *,
    axis: Axis = None,
    correction: Union[int, float] = 0.0,
    keepdims: bool = False,
) -> Tensor:
    """The standard deviation along ``axis``, dividing by ``N - correction``."""
    return _reduce("std", x, axis, keepdims, correction=correction)


def var(
    x: Tensor,
    /,
    *,
    axis: Axis = None,
    correction: Union[int, float] = 0.0,
    keepdims: bool = False,
) -> Tensor:
    """The variance along ``axis``, dividing by ``N - correction``."""
    return _reduce("var", x, axis, keepdims, correction=correction)


def _cumulative(
    name: str, x: Tensor, axis: Optional[int], dtype: Optional[DType], include_initial: bool
) -> Tensor:
    if axis is None:
        if x.ndim > 1:
            raise ValueError(
                f"cumulative_{name}: axis is required for an array of {x.ndim} dimensions"
            )
        axis = 0
    x = x.reshape(1) if x.ndim == 0 else x
    out = getattr(tw, "cum" + name)(x, axis, dtype=_accumulator(x, dtype))
    if not include_initial:
        return out
    shape = list(out.shape)
    shape[axis] = 1
    first = tw.full(tuple(shape), 0 if name == "sum" else 1, dtype=out.dtype, device=x.device)
    return tw.cat([first, out], dim=axis)


def cumulative_sum(
    x: Tensor,
    /,
    *,
    axis: Optional[int] = None,
    dtype: Optional[DType] = None,
    include_initial: bool = False,
) -> Tensor:
    """Running sums along ``axis`` (with a leading 0 if ``include_initial``)."""
    return _cumulative("sum", x, axis, dtype, include_initial)


def cumulative_prod(
    x: Tensor,
    /,
    *,
    axis: Optional[int] = None,
    dtype: Optional[DType] = None,
    include_initial: bool = False,
) -> Tensor:
    """Running products along ``axis`` (with a leading 1 if ``include_initial``)."""
    return _cumulative("prod", x, axis, dtype, include_initial)
