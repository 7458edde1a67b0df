"""Writes at indices with PyTorch's API: ``index_copy``, ``index_fill``, ``index_put``,
``masked_scatter`` (out of place; :mod:`tensorweaver.ops.methods` adds the in-place ``*_``
forms), ``fill_diagonal_`` and ``index_put_`` (which adds into memory that repeats
elements as PyTorch's kernel does).

Each lowers to a scatter (or scatter-add) of the core's own in-range indices, so gradients
come from the scatter rules: zero for what was overwritten, and for the written values
their slice of the incoming gradient. ``index_fill`` is a ``where`` over the filled slices,
so a duplicated index counts once in the value's gradient, as in PyTorch.

Indices are checked as PyTorch's CPU kernels check them, with their exception classes:
``index_copy`` takes only indices in ``[0, size)``; ``index_fill`` and ``index_put`` also
count negative ones from the end.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.node import saves_integer_input
from tensorweaver.contract import dtypes
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.ops.apply import broadcast_shapes, check_backends, labelled
from tensorweaver.ops.bounds import check_index
from tensorweaver.tensor import Tensor, _axis, _warn_deprecated_overlap


def _long_index(
    op: str, index: Any, x: Tensor, dtype_error: type[Exception], rank_error: type[Exception]
) -> Tensor:
    """``index`` as a 1-d int64 tensor, after PyTorch's checks of its dtype and rank (each
    op raises its own classes)."""
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        got = index.dtype.name if isinstance(index, Tensor) else type(index).__name__
        raise dtype_error(
            f"{op}: expected an int64 tensor as index, got {got}; convert with .long()"
        )
    check_backends(op, (x, index))
    if index.ndim > 1:
        raise rank_error(f"{op}: index must be 0-d or 1-d, got shape {list(index.shape)}")
    return mv.reshape(index, (-1,))


def _same_dtype(op: str, x: Tensor, other: Tensor, what: str) -> None:
    if other.dtype is not x.dtype:
        raise RuntimeError(
            f"{op}: self and {what} must have the same dtype, got {x.dtype.name} and "
            f"{other.dtype.name}; convert {what} with .to({x.dtype.name})"
        )


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with its slices at ``index`` along ``dim`` replaced by the slices
    of ``source``, in order (a duplicated index keeps one of its slices, unspecified which)."""
    if input._inference and ix.copied_first(input, index, source):
        with no_grad():
            out = index_copy(input, dim, index, source)
        return ew.as_copy_of(out, input)
    op = "index_copy()"
    d = _axis(dim, input.ndim, op)
    # (PyTorch's order: the index's rank, the source's against it and self's, then dtypes,
    # slice shapes and the number of indices)
    if isinstance(index, Tensor) and index.ndim > 1:
        raise IndexError(f"{op}: index must be 0-d or 1-d, got shape {list(index.shape)}")
    n = index.numel() if isinstance(index, Tensor) else 0
    if source.ndim == 0 and n != 1:
        raise IndexError(f"{op}: a 0-d source takes one index, got {n}")
    if source.ndim not in (0, input.ndim) and input.ndim:
        raise IndexError(
            f"{op}: source of shape {list(source.shape)} must have as many dimensions as self "
            f"of shape {list(input.shape)}"
        )
    given, index = index, _long_index(op, index, input, RuntimeError, IndexError)
    _same_dtype(op, input, source, "source")
    check_backends(op, (input, source))
    x = input if input.ndim else mv.reshape(input, (1,))
    src = source if source.ndim else mv.reshape(source, (1,) * x.ndim)
    if _sliced(source.shape, d) != _sliced(input.shape, d):
        raise RuntimeError(
            f"{op}: source slices of shape {list(source.shape)} do not fit self of shape "
            f"{list(input.shape)} outside dimension {d}"
        )
    if src.shape[d] != n:
        raise IndexError(
            f"{op}: the number of indices ({n}) must equal source.size({d}) ({src.shape[d]})"
        )
    _refuse_empty_dim(op, input, d, n)
    if input.ndim > 1 and input.numel() == 0:  # nothing to copy: PyTorch checks no index
        return input.clone()
    check_index(op, index, x.shape[d], d, error=IndexError)
    out = ix.scatter_unchecked(x, d, ix.along(index, d, src.shape), src)
    if out._node is not None:  # (PyTorch's node saves the index)
        ix.refuse_saved_indices(op, (index,))
        shaped, shape = ix.like(x), src.shape
        ix.remade_at_backward(out, lambda i: _copied_at(i, shaped(), d, shape), [given])
    out = out if input.ndim else mv.reshape(out, ())
    return saves_integer_input(labelled(out, "IndexCopyBackward0", input, source), given)


def _refuse_empty_dim(op: str, input: Tensor, d: int, n: int) -> None:
    """PyTorch's RuntimeError (its kernel's view of a slice out of the storage) where ``n``
    indices point into ``input``'s dimension ``d`` of size 0."""
    if n and input.ndim and not input.shape[d]:
        raise RuntimeError(
            f"{op}: {n} indices into dimension {d} of size 0 (self of shape "
            f"{list(input.shape)}); it has no slice to write"
        )


def _sliced(shape: tuple, d: int) -> list:
    """``shape`` without dimension ``d`` (a 0-d shape as it is): a slice's shape."""
    return [n for i, n in enumerate(shape) if i != d]


def _copied_at(index: Tensor, x: Tensor, d: int, shape: tuple) -> Tensor:
    """The index of ``index_copy``'s scatter node, made again from its ``index``."""
    op = "index_copy()"
    positions = _long_index(op, index, x, RuntimeError, IndexError)
    check_index(op, positions, x.shape[d], d, error=IndexError)
    return ix.along(positions, d, shape)


def _wrapped(op: str, index: Tensor, size: int, dim: int) -> Tensor:
    """``index`` checked against ``[-size, size)``, negative ones counted from the end."""
    if check_index(op, index, size, dim, error=IndexError, negative=True):
        index = ew.where(ew.lt(index, 0), ew.add(index, size), index)
    return index


def index_fill(
    input: Tensor,
    dim: int = mv.REQUIRED,
    index: Tensor = mv.REQUIRED,
    value: Any = mv.REQUIRED,
    **aliases: Any,
) -> Tensor:
    """A copy of ``input`` with its slices at ``index`` along ``dim`` set to ``value`` (a
    number or a 0-d tensor, differentiable)."""
    if aliases or dim is mv.REQUIRED or index is mv.REQUIRED or value is mv.REQUIRED:
        dim = mv.dim_alias("index_fill", aliases, dim, index=index, value=value)
    op = "index_fill()"
    d = _axis(dim, input.ndim, op)
    given = index
    index = _long_index(op, index, input, IndexError, RuntimeError)
    # (PyTorch's overload for a tensor value is its second)
    name = "IndexFillBackward1" if isinstance(value, Tensor) else "IndexFillBackward0"
    value_grad = isinstance(value, Tensor) and value.requires_grad
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(
                f"{op}: only supports a 0-dimensional value tensor, got shape {list(value.shape)}"
            )
        check_backends(op, (input, value))
        value = ew.cast(value, input.dtype)
    else:
        value = cr.full((), value, dtype=input.dtype, device=input)
    _refuse_empty_dim(op, input, d, index.shape[0])
    if input.numel() == 0:  # nothing to fill: PyTorch checks no index
        return input.clone()
    out = ew.where(_filled(index, input, d), value, input)
    if out._node is not None:  # (PyTorch's node saves the index: the mask made of it is none)
        ix.refuse_saved_indices(op, (given,))
        shaped = ix.like(input)
        remake = lambda i: _filled_at(i, shaped(), d, value_grad)  # noqa: E731
        ix.remade_at_backward(out, remake, [given])
        remade = out._node.saved
        if value_grad and type(remade) is ix.Remade and index.numel() and int(index.min()) < 0:
            remade.arrays = [None]  # (always remade at backward, where _filled_at refuses)
    return saves_integer_input(labelled(out, name, input), given)


def _filled_at(index: Tensor, input: Tensor, d: int, value_grad: bool) -> Tensor:
    """The mask of ``index_fill``'s where node, made again from its ``index``. Where the
    value requires grad, a negative position refuses as PyTorch's value gradient does (it
    index_selects the raw index)."""
    index = _long_index("index_fill()", index, input, IndexError, RuntimeError)
    if value_grad and index.numel() and int(index.min()) < 0:
        size = input.shape[d] if input.ndim else 1
        # (PyTorch's index_select: its dim-1 kernel's RuntimeError, IndexError elsewhere)
        error = RuntimeError if input.ndim > 1 and d == 1 else IndexError
        raise error(
            f"index_fill() backward: INDICES element is out of DATA bounds, "
            f"id={int(index.min())} axis_dim={size} (the value's gradient reads the index "
            "as given: pass non-negative positions)"
        )
    return _filled(index, input, d)


def _filled(index: Tensor, input: Tensor, d: int) -> Tensor:
    """The mask of ``index_fill``'s slices: ``input``'s dimension ``d`` true at ``index``
    (checked, negative positions counted from the end), others of size 1."""
    size = input.shape[d] if input.ndim else 1
    with no_grad():
        index = _wrapped("index_fill()", index, size, d)
        hit = cr.full((size,), False, dtype=dtypes.bool_, device=input)
        hit = ix.scatter_unchecked(
            hit, 0, index, mv.expand(cr.full((), True, device=input), index.shape)
        )
        view = [1] * input.ndim
        if input.ndim:
            view[d] = size
        return mv.reshape(hit, tuple(view))


def _positions(x: Tensor, indices: tuple) -> Tensor:
    """The flat positions in ``x`` that ``x[indices]`` reads, in the shape of that result."""
    with no_grad():
        flat = cr.arange(0, x.numel(), dtype=dtypes.int64, device=x)
        return ix.getitem(mv.reshape(flat, x.shape), indices)


def index_put(
    input: Tensor, indices: tuple | list, values: Tensor, accumulate: bool = False
) -> Tensor:
    """A copy of ``input`` with ``values`` (broadcast) written at ``input[indices]``, or added
    there with ``accumulate=True``, where duplicated indices add up."""
    return _index_put(input, indices, values, accumulate, None)


def _index_put(
    input: Tensor,
    indices: Any,
    values: Any,
    accumulate: bool,
    target: Tensor | None,
    into: tuple[Tensor, Tensor] | None = None,
) -> Tensor:
    """:func:`index_put`; ``target``: the tensor :func:`index_put_` writes the result into
    (``input`` is its value), whose repeated memory locations add up. ``into``: where
    ``input`` is an ``expand()`` view that repeats elements of its base, the base's value
    and each of ``input``'s elements' flat position in it: the values go there, and the
    base's new value is returned."""
    op = "index_put()"
    if not isinstance(indices, (tuple, list)) or not all(isinstance(i, Tensor) for i in indices):
        raise TypeError(
            f"{op}: indices must be a tuple of index tensors (no None or slices), got {indices!r}"
        )
    if not isinstance(values, Tensor):
        raise TypeError(f"{op}: values must be a tensor, got {type(values).__name__}")
    check_backends(op, (input, values, *indices))
    if not indices:
        raise RuntimeError(f"{op}: indices must hold at least one index tensor, got none")
    for index in indices:  # (a 0-d int8/int16 one too, which x[...] reads as an int)
        if index.dtype not in ix._POSITIONS and index.dtype not in ix._MASKS:
            raise IndexError(
                f"{op}: tensors used as indices must be long, int, byte or bool tensors, got "
                f"{index.dtype.name}"
            )
    for d, index in enumerate(indices):  # PyTorch checks these before the dtype, others after
        if d < input.ndim and not input.shape[d] and index.numel() and index.dtype.kind in "iu":
            raise IndexError(
                f"{op}: index is out of bounds for dimension {d} with size 0 (shape "
                f"{list(input.shape)})"
            )
    _same_dtype(op, input, values, "values")
    read = sum([i.ndim if i.ndim and i.dtype in ix._MASKS else 1 for i in indices])
    if read > input.ndim:  # (PyTorch counts a 0-d mask as one dimension here, unlike x[...])
        raise IndexError(f"too many indices for tensor of dimension {input.ndim} (got {read})")
    if not accumulate and ix._fills_through_byte_mask(list(indices), values):
        ix.check_mask_shape(input, indices[0], 0)  # (PyTorch checks the shape first)
        raise RuntimeError(
            f"{op}: masked_fill_ only supports boolean masks, but got mask with dtype uint8 "
            "(PyTorch writes one value through a mask with it); convert the mask with .bool()"
        )
    values_given = values
    if into is None:
        positions = _positions(input, tuple(indices))
    else:
        with no_grad():
            positions = ix.getitem(into[1], tuple(indices))
        input = into[0]
    try:
        values = mv.expand(values, positions.shape)
    except RuntimeError:
        raise RuntimeError(
            f"{op}: shape mismatch: values of shape {list(values.shape)} cannot be broadcast to "
            f"the indexed shape {list(positions.shape)}"
        ) from None
    where, what = mv.reshape(positions, (-1,)), mv.reshape(values, (-1,))
    per_location = accumulate and target is not None and into is None and _repeats_memory(target)
    if per_location:
        where, what = _per_location(target, where, what)
    write = ix.scatter_add_unchecked if accumulate else ix.scatter_unchecked
    written = write(mv.reshape(input, (-1,)), 0, where, what)
    if written._node is not None and into is None and not per_location:
        # (PyTorch's node reads the index tensors it saved: a write through their .data too)
        shaped = ix.like(input)
        ix.remade_at_backward(
            written, lambda *now: mv.reshape(_positions(shaped(), now), (-1,)), list(indices)
        )
    # (laid out as the input, PyTorch's clone with preserve_format)
    out = ix.allocated_as(mv.reshape(written, input.shape), input._preserved_order())
    if out._node is not None:  # (PyTorch's node saves the index tensors)
        ix.refuse_saved_indices(op, indices)
        out = labelled(out, "IndexPutBackward0", input, values_given)
    return saves_integer_input(out, *indices)


def index_put_(
    self: Tensor, indices: tuple | list, values: Tensor, accumulate: bool = False
) -> Tensor:
    """:func:`index_put` in place. Where this tensor's memory holds one location for several
    elements (an ``expand()`` view, NumPy memory with a zero stride), ``accumulate=True``
    adds every value aimed at a location there, as PyTorch's kernel adds into memory (its
    out-of-place ``index_put`` adds into a copy of distinct elements)."""
    if isinstance(indices, (tuple, list)):
        ix.refuse_overlapping_operands("index_put_", self, (values, *indices), indices)
    if self._view_of is not None:
        base = ix.expanded_base(self)
        if base is not None:
            return _put_through_expand(self, base, indices, values, accumulate)
    source = self._inplace_source(values)  # (values's gradient path: see there)
    result = _index_put(source, indices, values, accumulate, self)
    return self._assign(result, "index_put_")


def _put_through_expand(
    self: Tensor, base: Tensor, indices: Any, values: Any, accumulate: bool
) -> Tensor:
    """:func:`index_put_` into ``self``, an ``expand()`` of ``base`` that repeats its
    elements: written into ``base`` at each element's location, as PyTorch's kernel writes
    the shared memory; ``self`` then reads ``base`` again, so the values' gradient is their
    location's, summed over its copies, as PyTorch's CopySlices gives (no gradient goes back
    to ``base``'s earlier history: :func:`ix.through_repeats`)."""
    with no_grad():
        flat = cr.arange(0, base.numel(), dtype=dtypes.int64, device=base)
        located = mv.expand(mv.reshape(flat, base.shape), self.shape)
    source = ix.through_repeats(base._inplace_source(values), "index_put_")
    result = _index_put(self, indices, values, accumulate, None, (source, located))
    _warn_deprecated_overlap("index_put_")
    base._assign(labelled(result, "CopySlices", base), "index_put_")
    return self


def _repeats_memory(x: Tensor) -> bool:
    """Whether several of ``x``'s elements are one memory location: a view (or host-shared
    memory) whose elements' locations (by its strides) repeat."""
    if x._view_of is None and not x._repeats_host_memory():
        return False
    shape, strides = tuple(x.shape), x.stride()
    reach = 0  # (the farthest location the inner dimensions reach, innermost first)
    for n, s in sorted(zip(shape, strides), key=lambda pair: pair[1]):
        if n != 1 and s <= reach:
            break
        reach += s * (n - 1)
    else:
        return False  # (each dimension steps past all the inner ones: no location twice)
    locations = np.sort(_locations(shape, strides))
    return bool((locations[1:] == locations[:-1]).any())


def _locations(shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """Each element's memory location (in elements from the first), row-major."""
    grid = np.zeros(shape, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        grid += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
    return grid.reshape(-1)


def _per_location(x: Tensor, where: Tensor, what: Tensor) -> tuple[Tensor, Tensor]:
    """The flat positions and values that, added in order into ``x``'s elements, add each
    value of ``what`` (aimed at ``where``) to every element of its memory location, in
    ``what``'s order (as PyTorch's kernel adds them); a value's gradient comes from its own
    position only, as PyTorch's ``index_put_`` reads the gradient there."""
    locations = _locations(tuple(x.shape), x.stride())
    aimed = x.backend.to_host(where.native).reshape(-1)
    order = np.argsort(locations, kind="stable")
    start = np.searchsorted(locations[order], locations[aimed])
    copies = np.searchsorted(locations[order], locations[aimed], side="right") - start
    source = np.repeat(np.arange(aimed.size), copies)  # (each value's copies, in its order)
    first = np.repeat(np.cumsum(copies) - copies, copies)
    element = order[np.repeat(start, copies) + np.arange(source.size) - first]
    with no_grad():
        positions = cr.tensor(element, dtype=dtypes.int64, device=x)
        taken = cr.tensor(source, dtype=dtypes.int64, device=x)
        own = cr.tensor(element == aimed[source], dtype=dtypes.bool_, device=x)
    values = ew.where(
        own, ix.index_select(what, 0, taken), ix.index_select(what.detach(), 0, taken)
    )
    return positions, values


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` (broadcast with the bool ``mask``) whose elements where ``mask``
    holds are, in row-major order, the first elements of ``source``."""
    op = "masked_scatter()"
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        got = mask.dtype.name if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"{op}: only supports bool masks, got {got}; convert with .bool()")
    _same_dtype(op, input, source, "source")
    check_backends(op, (input, mask, source))
    shape = broadcast_shapes(op, input.shape, mask.shape)
    where = ix.mask_positions(mask, shape)
    k = where.shape[0]
    if source.numel() < k:
        raise RuntimeError(
            f"{op}: source has {source.numel()} elements, fewer than the {k} the mask selects"
        )
    flat = mv.reshape(mv.expand(input, shape), (-1,))
    whole = mv.reshape(source, (-1,))
    if whole.shape[0] == k or not (source.requires_grad and is_grad_enabled()):
        written = ix.scatter_unchecked(flat, 0, where, mv.narrow(whole, 0, 0, k))
    else:
        # The node takes all of source, so that a mask written through its .data to hold
        # more elements before backward gives the next ones theirs, as PyTorch's node reads
        # the mask then (autograd/gradients.py _source_prefix)
        taken = mv.narrow(whole.detach(), 0, 0, k)
        native = flat.backend.scatter(flat.native, 0, where.native, taken.native)
        written = ix.apply_indexed("scatter", native, flat, 0, where, whole)
    if written._node is not None:  # (the gradients go where the mask holds then)
        ix.remade_at_backward(written, lambda m: ix.mask_positions(m, shape), [mask], True)
    out = mv.reshape(written, shape)
    if out._node is not None:  # (PyTorch's node saves the mask)
        ix.refuse_saved_indices(op, (mask,))
    return saves_integer_input(labelled(out, "MaskedScatterBackward0", input, source), mask)


def _diagonal(shape: tuple[int, ...], wrap: bool) -> np.ndarray:
    """The flat positions of the main diagonal of a tensor of ``shape``; with ``wrap``, a tall
    matrix's diagonal starts over every ``cols + 1`` rows, as NumPy's ``fill_diagonal``."""
    if len(shape) < 2:
        raise RuntimeError(
            f"fill_diagonal_: the tensor needs at least 2 dimensions, got shape {list(shape)}"
        )
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError(
            f"fill_diagonal_: all dimensions of a tensor with more than 2 must be of equal "
            f"length, got shape {list(shape)}"
        )
    numel = math.prod(shape)
    if len(shape) == 2:
        step = shape[1] + 1
        end = numel if wrap else min(shape) * step
    else:
        n = shape[0]
        step = sum(n**k for k in range(len(shape)))
        end = numel
    return np.arange(0, min(end, numel), step, dtype=np.int64)


def fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Set the main diagonal (``x[i, i, ...]``) to ``fill_value`` in place."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    positions = _diagonal(tuple(self.shape), wrap)
    source = self._inplace_source()
    index = cr.tensor(positions, dtype=dtypes.int64, device=self)
    values = cr.full((len(positions),), fill_value, dtype=self.dtype, device=self)
    flat = ix.scatter_unchecked(mv.reshape(source, (-1,)), 0, index, values)
    return self._assign(mv.reshape(flat, self.shape), "fill_diagonal_")
