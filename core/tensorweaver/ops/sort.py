"""Ordering along one dimension: ``sort``, ``argsort``, ``topk``, ``msort``, PyTorch's semantics.

Every one is an ``argsort`` followed by a ``gather``, so gradients need no rule of their own
(the values' gradient is the gather's: scattered back to where each value came from). The
order is always stable, and NaN sorts after every number (first when descending), as in
PyTorch. A backend sorts with the optional ``argsort`` method (see ``OPTIONAL`` in the IR);
without it the core sorts on the host, which costs two copies.
"""

from __future__ import annotations

import numpy as np

from tensorweaver import return_types
from tensorweaver.contract import dtypes
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.tensor import Tensor, _axis


def _ascending_order(x: Tensor, axis: int) -> Tensor:
    """The stable ascending sort order of ``x`` along ``axis`` (int64, no graph)."""
    backend = x.backend
    argsort = getattr(backend, "argsort", None)
    if argsort is not None:
        native = argsort(x.native, axis)
    else:
        host = np.argsort(backend.to_host(x.native), axis, kind="stable")
        native = backend.from_host(host, dtypes.int64)
    return Tensor(native, backend, dtypes.int64)


def _not_complex(op: str, x: Tensor) -> None:
    if x.dtype.is_complex:  # PyTorch's words
        raise RuntimeError(
            f"{op} does not support complex dtypes; sort by x.abs() or x.real instead"
        )


def argsort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort ``x`` along ``dim`` (``stable`` is accepted: the order always
    is stable)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"argsort: expected a Tensor, got {type(x).__name__}")
    _not_complex("Sort", x)
    axis = _axis(dim, x.ndim, "argsort")
    if x.ndim == 0:
        return Tensor(x.backend.full((), 0, dtypes.int64), x.backend, dtypes.int64)
    if not descending:
        return _ascending_order(x, axis)
    # Stable descending: the ascending order of the reversed tensor, reversed and mapped
    # back, keeps equal elements in their original order (and puts NaN first).
    order = mv.flip(_ascending_order(mv.flip(x, (axis,)), axis), (axis,))
    return ew.sub(x.shape[axis] - 1, order)


def sort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> tuple:
    """``(values, indices)``: ``x`` sorted along ``dim``, and where each value came from."""
    order = argsort(x, dim, descending, stable)
    if x.ndim == 0:
        return return_types.sort(x.clone(), order)
    return return_types.sort(ix.gather_unchecked(x, _axis(dim, x.ndim, "sort"), order), order)


def msort(x: Tensor) -> Tensor:
    """``x`` sorted along its first dimension."""
    return sort(x, 0).values


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices, in order
    (``sorted=False`` allows any order; they come sorted anyway)."""
    _not_complex("topk", x)
    if x.dtype is dtypes.bool_:
        raise RuntimeError("topk does not support bool dtypes (as PyTorch on the CPU); use .int()")
    axis = _axis(dim, x.ndim, "topk")
    size = x.shape[axis] if x.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(
            f"topk: k={k} is out of range for dimension {dim} of size {size}; choose "
            f"0 <= k <= {size}"
        )
    values, indices = sort(x, dim, descending=largest)
    if x.ndim == 0:
        return return_types.topk(values, indices)
    return return_types.topk(mv.narrow(values, axis, 0, k), mv.narrow(indices, axis, 0, k))
