"""``select_scatter``, ``slice_scatter``, ``diagonal_scatter``, ``as_strided_scatter``: a
copy of ``input`` with ``src`` written into one view of it, differentiable in both
(PyTorch's out-of-place forms of ``x[i] = src``, ``x[a:b:s] = src``,
``x.diagonal()[:] = src`` and ``x.as_strided(size, stride)[:] = src``)."""

from __future__ import annotations

from typing import Any, Optional

from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.ops import structure, views
from tensorweaver.tensor import Tensor, _axis


def _write(input: Tensor, index: tuple, src: Tensor, op: str) -> Tensor:
    out = input.clone()
    target = out[index]
    if tuple(target.shape) != tuple(src.shape):
        raise RuntimeError(
            f"{op}: expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(target.shape)}"
        )
    out[index] = src
    return out


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    axis = _axis(dim, input.ndim, "select_scatter")
    return _write(input, (slice(None),) * axis + (index,), src, "select_scatter")


def slice_scatter(
    input: Tensor,
    src: Tensor,
    dim: int = 0,
    start: Optional[int] = None,
    end: Optional[int] = None,
    step: int = 1,
) -> Tensor:
    axis = _axis(dim, input.ndim, "slice_scatter")
    return _write(input, (slice(None),) * axis + (slice(start, end, step),), src, "slice_scatter")


def diagonal_scatter(
    input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> Tensor:
    diagonal = structure.diagonal(input, offset, dim1, dim2)
    if tuple(diagonal.shape) != tuple(src.shape):
        raise RuntimeError(
            f"diagonal_scatter: expected src to have a size equal to the slice of self. src "
            f"size = {list(src.shape)}, slice size = {list(diagonal.shape)}"
        )
    d1, d2 = structure.diagonal_dims("diagonal_scatter", input.ndim, dim1, dim2)
    return structure.with_diagonal(input, src, offset, d1, d2)


def as_strided_scatter(
    input: Tensor, src: Tensor, size: Any, stride: Any, storage_offset: Optional[int] = None
) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``input.as_strided(size, stride,
    storage_offset)``: ``input``'s memory (as PyTorch's storage) holds ``input``'s elements
    and ``src`` is written over them there; differentiable in both."""
    size = views._sizes("as_strided_scatter", size, "size")
    stride = views._sizes("as_strided_scatter", stride, "stride")
    memory = views.Memory(input)
    strides = memory.x_strides
    if strides is not None and any(s == 0 and n > 1 for n, s in zip(input.shape, strides)):
        # An input that holds a memory position twice (expanded) is copied first, into
        # memory of its own laid out in C order, as PyTorch's clone_preserve_strides does:
        # src written into the shared memory would show in every copy of a position.
        input = mv.contiguous(input)
        memory = views.Memory(input)
    offset = memory.start if storage_offset is None else storage_offset
    index = memory.index(input, size, stride, offset)
    if tuple(src.shape) != size:
        raise RuntimeError(
            f"as_strided_scatter: expected src to have a size equal to the slice of self. src "
            f"size = {list(src.shape)}, slice size = {list(size)}"
        )
    own = memory.own(input)
    written = views.image(input, own, memory.extent)  # (only input's elements are read back)
    values = mv.reshape(src.to(input.dtype), (-1,))
    written = ix.scatter_unchecked(written, 0, mv.reshape(index, (-1,)), values)
    return mv.reshape(ix.getitem(written, own), input.shape)
