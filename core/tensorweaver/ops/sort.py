"""Ordering along one dimension: ``sort``, ``argsort``, ``topk``, ``msort``, PyTorch's semantics.

Every one is an ``argsort`` followed by a ``gather``, so gradients need no rule of their own
(the values' gradient is the gather's: scattered back to where each value came from). The
order is always stable, and NaN sorts after every number (first when descending), as in
PyTorch. A backend sorts with the optional ``argsort`` method (see ``OPTIONAL`` in the IR);
without it the core sorts on the host, which costs two copies.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorweaver import return_types
from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.autograd.node import (
    INVALID_HISTORIES,
    _refuse_invalid_histories,
    saves_integer_output,
)
from tensorweaver.contract import dtypes
from tensorweaver.memory_formats import c_ordered, laid_out, preserved_order
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.ops.apply import apply, labelled, out_needs_no_grad
from tensorweaver.ops.out_arguments import call_with_out
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
    is a TypeError). Hot paths test ``type(flag) is not bool`` first and call this for the
    error only (a call with keywords costs more than the op's own checks)."""
    for name, value in flags.items():
        if type(value) is not bool:
            raise TypeError(f"{op}(): argument '{name}' must be bool, not {type(value).__name__}")


class _Default:
    """A keyword's default, told apart from the same value given (``sort(x, 0, dim=-1)`` gives
    ``dim`` twice, a TypeError as PyTorch's)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


_DIM: Any = _Default(-1)
_DESCENDING: Any = _Default(False)
#: ``stable`` not given: the first overload.
_UNSET: Any = _Default(False)


def _overload(op: str, args: tuple, dim: Any, descending: Any, stable: Any) -> tuple:
    """``(dim, descending)`` by PyTorch's two overloads of ``sort`` and ``argsort``:
    ``(input, dim=-1, descending=False)`` and ``(input, *, stable, dim=-1, descending=False)``
    (``sort``'s ``stable=None`` is the second one's)."""
    if args:
        if len(args) > 2 or stable is not _UNSET:
            raise TypeError(
                f"{op}() received an invalid combination of arguments: it takes (input, "
                "dim=-1, descending=False) or (input, *, stable, dim=-1, descending=False), got "
                f"{len(args)} more positional arguments"
                f"{' with stable=' if stable is not _UNSET else ''}; pass dim and descending "
                "by keyword"
            )
        if dim is not _DIM or (len(args) == 2 and descending is not _DESCENDING):
            name = "dim" if dim is not _DIM else "descending"
            raise TypeError(f"{op}() got multiple values for argument '{name}'")
        dim = args[0]
        descending = args[1] if len(args) == 2 else descending
    elif type(stable) is not bool and stable is not _UNSET and (stable is not None or op != "sort"):
        check_flags(op, stable=stable)
    dim = -1 if dim is _DIM else dim
    descending = False if descending is _DESCENDING else descending
    if type(descending) is not bool:
        check_flags(op, descending=descending)
    return dim, descending


def _argsort(x: Tensor, dim: int, descending: bool) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"argsort: expected a Tensor, got {type(x).__name__}")
    _not_complex("Sort", x)
    axis = _axis(dim, x.ndim, "argsort")
    if x.ndim == 0:
        return Tensor(x.backend.full((), 0, dtypes.int64), x.backend, dtypes.int64)
    if 0 in x._shape:  # (nothing to order: laid out as the input, as torch's empty result)
        return Tensor(x.backend.cast(x.native, dtypes.int64), x.backend, dtypes.int64)
    if not descending:
        return _ascending_order(x, axis)
    # Stable descending: the ascending order of the reversed tensor, reversed and mapped
    # back, keeps equal elements in their original order (and puts NaN first).
    order = mv.flip(_ascending_order(mv.flip(x, (axis,)), axis), (axis,))
    return ew.sub(x.shape[axis] - 1, order)


def _gathered_in_order(x: Tensor, axis: int, order: Tensor) -> Any:
    """The array of ``x``'s values at ``order`` along ``axis``, laid out as torch's sort
    kernel lays its values out: as ``x`` where ``x`` is dense, else dense in the order of its
    strides (``preserve_format``). A backend's gather gives C order (torch's) or the index's
    layout (NumPy's), so it gathers along ``x`` and ``order`` seen in that order."""
    backend, shape = x.backend, tuple(x.shape)
    # (C order told cheaply first: Tensor._preserved_order would copy a torch array to tell)
    if 0 in shape:  # (nothing to gather: an empty x's own array, whose strides torch keeps)
        return x._unshared_native()
    if c_ordered(x.native) and 1 not in shape:
        return backend.gather(x.native, axis, order.native)
    perm = preserved_order(shape, x._strides())
    if perm == tuple(range(x.ndim)):
        return backend.gather(x.native, axis, order.native)
    moved = (backend.permute(x.native, perm), perm.index(axis), backend.permute(order.native, perm))
    return backend.permute(backend.gather(*moved), tuple(map(perm.index, range(x.ndim))))


def _sort(x: Tensor, dim: int, descending: bool, grad_fn: str = "SortBackward0") -> tuple:
    """``(values, indices)``, the values' node named ``grad_fn`` (PyTorch's overload)."""
    order = _argsort(x, dim, descending)
    if x.ndim == 0:  # (a copy, not x.clone(): no CopyBackwards for an inference x, as torch)
        values = apply("identity", x._unshared_native(), x.dtype, (x,))
    else:
        axis = _axis(dim, x.ndim, "sort")
        values = apply("gather", _gathered_in_order(x, axis, order), x.dtype, (x,), (axis, order))
    return return_types.sort(labelled(values, grad_fn, x), order)


def _copied_first(values: Tensor, x: Tensor) -> Tensor:
    """``values``, recorded as PyTorch's sort kernel makes them from an inference ``x`` that
    requires grad, which its autograd skips: ``x`` copied into a new tensor (CopyBackwards,
    whose gradient is the identity, not the permutation), then sorted there. A 0-d ``x``'s
    values, and topk's, are not recorded."""
    return ew.as_copy_of(values, x) if x.ndim else values


def argsort(
    input: Tensor,
    *args: Any,
    dim: int = _DIM,
    descending: bool = _DESCENDING,
    stable: bool = _UNSET,
    out: Tensor | None = None,
    **aliases: Any,
) -> Tensor:
    """``argsort(input, dim=-1, descending=False)`` or ``argsort(input, *, stable, dim=-1,
    descending=False, out=None)``: the indices that sort ``input`` along ``dim`` (``stable``
    is accepted: the order always is stable; ``out=`` only with it, as PyTorch's)."""
    if aliases:  # (NumPy's axis=, as PyTorch's parser takes it)
        from tensorweaver.ops.reduce import numpy_names  # (reduce imports this module)

        dim = numpy_names("argsort", aliases, dim, None, (_DIM,))[0]
    if out is not None:
        if stable is _UNSET:
            raise TypeError(
                "argsort() received an invalid combination of arguments: out= is taken only "
                "by argsort(input, *, stable, dim=-1, descending=False, out=None); pass stable="
            )
        if is_grad_enabled() and isinstance(input, Tensor) and input.requires_grad:
            # (PyTorch's argsort(out=) is its sort's, whose values would need a gradient)
            raise out_needs_no_grad("sort")
        keywords = {"dim": dim, "descending": descending, "stable": stable}
        return call_with_out("argsort", argsort, (input, *args), keywords, out)
    dim, descending = _overload("argsort", args, dim, descending, stable)
    if INVALID_HISTORIES and is_grad_enabled():
        # (PyTorch's argsort is its sort, which records a node on an input that needs a
        # gradient: refused for a view whose history its base's in-place change invalidated)
        _refuse_invalid_histories((input,))
    return _argsort(input, dim, descending)


def sort(
    input: Tensor,
    *args: Any,
    dim: int = _DIM,
    descending: bool = _DESCENDING,
    stable: bool | None = _UNSET,
    **aliases: Any,
) -> tuple:
    """``sort(input, dim=-1, descending=False)`` or ``sort(input, *, stable, dim=-1,
    descending=False)``: ``(values, indices)``, ``input`` sorted along ``dim`` and where each
    value came from (``stable`` is accepted: the order always is stable)."""
    if aliases:
        from tensorweaver.ops.reduce import numpy_names

        dim = numpy_names("sort", aliases, dim, None, (_DIM,))[0]
    dim, descending = _overload("sort", args, dim, descending, stable)
    # (the overload with stable= is PyTorch's second)
    values, indices = _sort(
        input, dim, descending, "SortBackward0" if stable is _UNSET else "SortBackward1"
    )
    values = _copied_first(values, input)
    saves_integer_output(values, indices)  # (PyTorch's node saves the indices)
    return return_types.sort(values, indices)


def msort(input: Tensor) -> Tensor:
    """``input`` sorted along its first dimension."""
    return _copied_first(_sort(input, 0, False).values, input)


def topk(
    input: Tensor,
    k: int,
    dim: int = -1,
    largest: bool = True,
    sorted: bool = True,
    **aliases: Any,
) -> tuple:
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices, in order
    (``sorted=False`` allows any order; they come sorted anyway)."""
    if aliases:
        from tensorweaver.ops.reduce import numpy_names

        dim = numpy_names("topk", aliases, dim, None, (-1,))[0]
    if type(k) is not int:
        k = index_argument(k, "topk", "k")
    if type(largest) is not bool or type(sorted) is not bool:
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
    if input.ndim:
        # (the values gathered at the indices returned: the node reads them, as PyTorch's
        # reads its saved indices, so a write through their .data reaches backward; both
        # C-ordered whatever the input's layout, as torch's: the order's first k copied so,
        # in the backend's primitives, an empty one made so)
        backend = input.backend
        shape = (*input.shape[:axis], k, *input.shape[axis + 1 :])
        if 0 in shape:
            native = backend.full(shape, 0, dtypes.int64)
        else:
            order = _argsort(input, dim, largest).native
            first = backend.slice(order, (0,) * input.ndim, shape, (1,) * input.ndim)
            native = laid_out(backend, first, tuple(range(input.ndim)))
        indices = Tensor(native, backend, dtypes.int64)
        values = ix.gather_unchecked(input, axis, indices)
    else:
        values, indices = _sort(input, dim, largest)
    values = labelled(values, "TopkBackward0", input)
    saves_integer_output(values, indices)
    return return_types.topk(values, indices)
