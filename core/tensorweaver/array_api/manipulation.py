"""Manipulation functions: the standard's shape functions over the core's."""

from __future__ import annotations

from typing import Optional, Union

import tensorweaver as tw
from tensorweaver.array_api.dtypes import result_type
from tensorweaver.array_api.statistical import axes_of
from tensorweaver.tensor import Tensor


def broadcast_arrays(*arrays: Tensor) -> tuple[Tensor, ...]:
    """The arrays broadcast against each other."""
    return tuple(tw.broadcast_tensors(*arrays))


def broadcast_shapes(*shapes: tuple) -> tuple[int, ...]:
    """The shape that ``shapes`` broadcast to (ValueError where they do not)."""
    try:
        return tuple(tw.broadcast_shapes(*shapes))
    except RuntimeError as exc:
        raise ValueError(f"broadcast_shapes: {exc}") from None


def broadcast_to(x: Tensor, /, shape: tuple) -> Tensor:
    """``x`` broadcast to ``shape``."""
    return tw.broadcast_to(x, tuple(shape))


def concat(arrays: Union[tuple, list], /, *, axis: Optional[int] = 0) -> Tensor:
    """The arrays joined along ``axis`` (None: flattened first)."""
    arrays = _promoted(arrays)
    if axis is None:
        return tw.cat([a.reshape(-1) for a in arrays])
    return tw.cat(arrays, dim=axis)


def _promoted(arrays: Union[tuple, list]) -> list[Tensor]:
    """The arrays in their common dtype by the standard's promotion."""
    dtype = result_type(*arrays)
    return [a if a.dtype is dtype else a.to(dtype) for a in arrays]


def expand_dims(x: Tensor, /, axis: Union[int, tuple] = 0) -> Tensor:
    """``x`` with new axes of size 1 at ``axis`` (positions in the result)."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = x.ndim + len(axes)
    places = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise IndexError(
                f"expand_dims: axis {a} is out of range for a result of {ndim} dimensions"
            )
        places.append(a % ndim)
    if len(set(places)) != len(places):
        raise ValueError(f"expand_dims: repeated axes {axes}")
    shape = iter(x.shape)
    return x.reshape(tuple(1 if i in places else next(shape) for i in range(ndim)))


def flip(x: Tensor, /, *, axis: Union[int, tuple, None] = None) -> Tensor:
    """``x`` with the order of elements along ``axis`` (None: every axis) reversed."""
    return tw.flip(x, axes_of(x, axis))


def moveaxis(x: Tensor, source: Union[int, tuple], destination: Union[int, tuple], /) -> Tensor:
    """``x`` with axes ``source`` moved to ``destination``."""
    return tw.movedim(x, source, destination)


def permute_dims(x: Tensor, /, axes: tuple) -> Tensor:
    """``x`` with its axes in the order ``axes``."""
    return x.permute(*axes)


def repeat(x: Tensor, repeats: Union[int, Tensor], /, *, axis: Optional[int] = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (None: of the flattened ``x``)."""
    return tw.repeat_interleave(x, repeats, dim=axis)


def reshape(x: Tensor, /, shape: tuple, *, copy: Optional[bool] = None) -> Tensor:
    """``x`` in ``shape`` (``copy=False``: a view or ValueError; ``copy=True``: a copy)."""
    if copy is False:
        try:
            return x.view(tuple(shape))
        except RuntimeError as exc:
            raise ValueError(f"reshape: copy=False, but {exc}") from None
    out = x.reshape(tuple(shape))
    return out.clone() if copy else out


def roll(x: Tensor, /, shift: Union[int, tuple], *, axis: Union[int, tuple, None] = None) -> Tensor:
    """``x`` rolled by ``shift`` along ``axis`` (None: flattened, then shaped back)."""
    return tw.roll(x, shift, axis)


def squeeze(x: Tensor, /, axis: Union[int, tuple]) -> Tensor:
    """``x`` without the axes ``axis``, each of which must have size 1."""
    axes = axes_of(x, axis)
    wide = [a for a in axes if x.shape[a] != 1]
    if wide:
        raise ValueError(
            f"squeeze: axes {wide} of an array of shape {tuple(x.shape)} do not have size 1"
        )
    return x.reshape(tuple(n for i, n in enumerate(x.shape) if i not in axes))


def stack(arrays: Union[tuple, list], /, *, axis: int = 0) -> Tensor:
    """The arrays joined along a new axis ``axis``."""
    return tw.stack(_promoted(arrays), dim=axis)


def tile(x: Tensor, repetitions: tuple, /) -> Tensor:
    """``x`` repeated ``repetitions`` times along each axis."""
    return tw.tile(x, tuple(repetitions))


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The arrays along ``axis`` of ``x``."""
    return tuple(tw.unbind(x, axis))
