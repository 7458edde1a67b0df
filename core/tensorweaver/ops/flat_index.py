"""Indexing a tensor as if it were flat (row-major): ``tw.unravel_index`` (flat indices to
coordinates) and ``put``/``put_`` (write, or add with ``accumulate``, at flat indices)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral

from tensorweaver.autograd.node import saves_integer_input
from tensorweaver.contract import dtypes
from tensorweaver.ops import coordinates as co
from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.ops.apply import labelled
from tensorweaver.tensor import Tensor


def unravel_index(indices: Tensor, shape: int | Sequence[int]) -> tuple[Tensor, ...]:
    """The coordinates (int64 tensors, one per dimension of ``shape``) that the flat indices
    ``indices`` have in a tensor of ``shape``; indices beyond it wrap, as PyTorch's do."""
    if not isinstance(indices, Tensor):
        raise TypeError(
            f"unravel_index(): expected 'indices' to be a tensor, got {type(indices).__name__}"
        )
    if indices.dtype.kind not in "iu":
        raise TypeError(
            f"unravel_index(): expected 'indices' to be integer dtype, but got {indices.dtype.name}"
        )
    if isinstance(shape, Integral):
        shape = (int(shape),)
    elif not isinstance(shape, Sequence) or not all(isinstance(n, Integral) for n in shape):
        raise TypeError(
            f"unravel_index(): expected 'shape' to be an int or a sequence of ints, got {shape!r}"
        )
    shape = tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"unravel_index(): 'shape' cannot have negative values, got {shape}")
    flat = indices.to(dtypes.int64)
    return tuple((flat // math.prod(shape[d + 1 :])) % n for d, n in enumerate(shape))


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with the elements at the flat ``index`` (negative from the end)
    replaced by ``source``'s, in order, or with ``source`` added there (``accumulate``)."""
    op = "put_()"
    if index.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}: Expected a long tensor for index, but got {index.dtype.name}")
    if source.dtype is not input.dtype:
        raise RuntimeError(
            f"{op}: self and source expected to have the same dtype, but got self.dtype = "
            f"{input.dtype.name} and source.dtype = {source.dtype.name}"
        )
    if source.numel() != index.numel():
        raise IndexError(
            f"{op}: Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source.numel()}, index.numel() = {index.numel()}"
        )
    n = input.numel()
    flat_index = _positions(op, index, n)
    flat = mv.reshape(input, (n,))
    values = mv.reshape(source, (-1,))
    if accumulate:
        out = ix.index_add(flat, 0, flat_index, values)
    else:
        from tensorweaver.ops.index_write import index_copy

        out = index_copy(flat, 0, flat_index, values)
    # (laid out as the input, PyTorch's clone with preserve_format)
    shaped = ix.allocated_as(mv.reshape(out, input.shape), input._preserved_order())
    if out._node is None:
        return shaped
    # (PyTorch's node saves the index: changed in place, it makes backward refuse; written
    # through its .data, it gives the positions backward reads)
    ix.refuse_saved_indices("put", (index,))
    ix.remade_at_backward(out, lambda i: _positions(op, i, n), [index])
    return saves_integer_input(labelled(shaped, "PutBackward0", input, source), index)


def _positions(op: str, index: Tensor, n: int) -> Tensor:
    """``put``'s ``index`` as positions in ``[0, n)``, flat, after checking its range (negative
    ones count from the end)."""
    flat_index = mv.reshape(index, (-1,))
    if flat_index.numel():
        low, high = int(flat_index.min().item()), int(flat_index.max().item())
        if low < -n or high >= n:
            bad = low if low < -n else high
            raise IndexError(
                f"{op}: out of range: tried to access index {bad} on a tensor of {n} elements"
            )
        if low < 0:  # (else the node keeps a 1-d index itself, which PyTorch's node reads)
            flat_index = co.where(flat_index < 0, flat_index + n, flat_index)
    return flat_index


def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    result = put(self._inplace_source(), index, source, accumulate)
    # (after put's argument checks, as PyTorch's order)
    ix.refuse_overlapping_operands("put_", self, (source, index))
    return self._assign(result, "put_")
