"""Ordering along one dimension: ``sort``, ``argsort``, ``topk``, ``msort``, PyTorch's semantics.

Every one is an ``argsort`` followed by a ``gather``, so gradients need no rule of their own
(the values' gradient is the gather's: scattered back to where each value came from). The
order is always stable, and NaN sorts after every number (first when descending), as in
PyTorch. A backend sorts with the optional ``argsort`` method (see ``OPTIONAL`` in the IR);
without it the core sorts on the host, which costs two copies.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from tensorweaver import return_types
from tensorweaver.contract import dtypes
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.tensor import Tensor, _axis, index_argument


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


def check_flags(op: str, **flags: Any) -> None:
    """PyTorch's check of bool arguments: Python bools only (an int, None or a NumPy bool
    is a TypeError)."""
    for name, value in flags.items():
        if type(value) is not bool:
            raise TypeError(f"{op}(): argument '{name}' must be bool, not {type(value).__name__}")


#: ``stable`` not given: the first overload.
_UNSET: Any = object()


def _overloads(fn: Callable[..., Any]) -> Callable[..., Any]:
    """PyTorch's two overloads of ``sort`` and ``argsort``: ``(input, dim=-1,
    descending=False)`` and ``(input, *, stable, dim=-1, descending=False)``."""

    @functools.wraps(fn)
    def call(input: Tensor, *args: Any, stable: Any = _UNSET, **kwargs: Any) -> Any:
        if stable is None and fn.__name__ == "sort":  # (sort's stable is Optional[bool])
            stable = _UNSET
        if len(args) > 2 or (stable is not _UNSET and args):
            raise TypeError(
                f"{fn.__name__}() received an invalid combination of arguments: it takes "
                "(input, dim=-1, descending=False) or (input, *, stable, dim=-1, "
                f"descending=False), got {len(args)} more positional arguments"
                f"{' with stable=' if stable is not _UNSET else ''}; pass dim and descending "
                "by keyword"
            )
        if stable is _UNSET:
            return fn(input, *args, **kwargs)
        check_flags(fn.__name__, stable=stable)
        return fn(input, *args, stable=stable, **kwargs)

    return call


def _argsort(x: Tensor, dim: int, descending: bool) -> Tensor:
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


def _sort(x: Tensor, dim: int, descending: bool) -> tuple:
    order = _argsort(x, dim, descending)
    if x.ndim == 0:
        return return_types.sort(x.clone(), order)
    return return_types.sort(ix.gather_unchecked(x, _axis(dim, x.ndim, "sort"), order), order)


@_overloads
def argsort(
    input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False
) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (``stable`` is accepted: the order always
    is stable)."""
    check_flags("argsort", descending=descending)
    return _argsort(input, dim, descending)


@_overloads
def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> tuple:
    """``(values, indices)``: ``input`` sorted along ``dim``, and where each value came from
    (``stable`` is accepted: the order always is stable)."""
    check_flags("sort", descending=descending)
    return _sort(input, dim, descending)


def msort(input: Tensor) -> Tensor:
    """``input`` sorted along its first dimension."""
    return _sort(input, 0, False).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices, in order
    (``sorted=False`` allows any order; they come sorted anyway)."""
    k = index_argument(k, "topk", "k")
    check_flags("topk", largest=largest, sorted=sorted)
    _not_complex("topk", input)
    axis = _axis(dim, input.ndim, "topk")
    if input.dtype is dtypes.bool_:  # checked after the dim, as PyTorch
        raise RuntimeError("topk does not support bool dtypes (as PyTorch on the CPU); use .int()")
    size = input.shape[axis] if input.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(
            f"topk: k={k} is out of range for dimension {dim} of size {size}; choose "
            f"0 <= k <= {size}"
        )
    values, indices = _sort(input, dim, largest)
    if input.ndim == 0:
        return return_types.topk(values, indices)
    return return_types.topk(mv.narrow(values, axis, 0, k), mv.narrow(indices, axis, 0, k))
