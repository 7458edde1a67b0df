"""PyTorch's ``<view op>_copy`` functions (``permute_copy``, ``view_copy``, ``t_copy``, ...):
the view op's result as a tensor of its own, sharing no memory with the input, and
differentiable as the view op is (its node PyTorch's: ``<view op's node>_copy`` over the
input's, ``NarrowCopyBackward0`` for ``narrow_copy``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensorweaver.ops import movement as mv
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.complex import view_as_complex, view_as_real
from tensorweaver.ops.spellings import select
from tensorweaver.ops.views import as_strided
from tensorweaver.tensor import Tensor, index_argument


def _own(view: Tensor, grad_fn: str, input: Tensor) -> Tensor:
    """``view`` (of ``input``)'s values in new contiguous memory, as PyTorch's ``_copy``
    functions return them (a ``clone()`` would keep a transposed layout), its node named
    ``grad_fn`` over ``input``'s: PyTorch's one node for the view op and the copy."""
    out = view.contiguous()
    return labelled(out.clone() if out is view else out, grad_fn, input)


def _copies(parts: Sequence[Tensor], grad_fn: str, input: Tensor) -> tuple[Tensor, ...]:
    return tuple(_own(p, grad_fn, input) for p in parts)


def alias_copy(input: Tensor) -> Tensor:
    return _own(input, "AliasBackward0_copy", input)


def as_strided_copy(
    input: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None
) -> Tensor:
    return _own(as_strided(input, size, stride, storage_offset), "AsStridedBackward0_copy", input)


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return _own(input.diagonal(offset, dim1, dim2), "DiagonalBackward0_copy", input)


def expand_copy(input: Tensor, size: Sequence[int], *, implicit: bool = False) -> Tensor:
    return _own(mv.expand(input, *size), "ExpandBackward0_copy", input)


def narrow_copy(
    input: Tensor,
    dim: int = mv.REQUIRED,
    start: int = mv.REQUIRED,
    length: int = mv.REQUIRED,
    **aliases: Any,
) -> Tensor:
    if aliases or dim is mv.REQUIRED or start is mv.REQUIRED or length is mv.REQUIRED:
        dim = mv.dim_alias("narrow_copy", aliases, dim, mv.REQUIRED, start=start, length=length)
    # (ints as PyTorch's parser reads them: no bool, no float; start may be a 0-d tensor)
    dim = index_argument(dim, "narrow_copy", "dim")
    length = index_argument(length, "narrow_copy", "length")
    # PyTorch's kernel raises RuntimeError here, before narrow's IndexError for a dim < -ndim.
    if not input.ndim:
        raise RuntimeError("narrow_copy(): narrow() cannot be applied to a 0-dim tensor")
    if dim >= input.ndim:
        raise RuntimeError(
            f"narrow_copy(): expected dim < {input.ndim} (the input's number of dimensions), "
            f"got {dim}"
        )
    return _own(mv.narrow(input, dim, start, length), "NarrowCopyBackward0", input)


def permute_copy(input: Tensor, dims: Sequence[int]) -> Tensor:
    return _own(mv.permute(input, *dims), "PermuteBackward0_copy", input)


def select_copy(input: Tensor, dim: int, index: int) -> Tensor:
    return _own(select(input, dim, index), "SelectBackward0_copy", input)


def slice_copy(
    input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
) -> Tensor:
    index = (slice(None),) * (dim % input.ndim) + (slice(start, end, step),)
    return _own(input[index], "SliceBackward0_copy", input)


def split_copy(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    return _copies(input.split(split_size, dim), "SplitBackward0_copy", input)


def split_with_sizes_copy(
    input: Tensor, split_sizes: Sequence[int], dim: int = 0
) -> tuple[Tensor, ...]:
    return _copies(input.split(list(split_sizes), dim), "SplitWithSizesBackward0_copy", input)


def squeeze_copy(input: Tensor, dim: Any = None) -> Tensor:
    # (PyTorch's node for each of squeeze's overloads: all dims, one, several)
    overload = 0 if dim is None else 2 if isinstance(dim, (tuple, list)) else 1
    return _own(mv.squeeze(input, dim), f"SqueezeBackward{overload}_copy", input)


def t_copy(input: Tensor) -> Tensor:
    return _own(mv.t(input), "TBackward0_copy", input)


def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return _own(mv.transpose(input, dim0, dim1), "TransposeBackward0_copy", input)


def unbind_copy(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    return _copies(input.unbind(dim), "UnbindBackward0_copy", input)


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    return _own(input.unfold(dimension, size, step), "UnfoldBackward0_copy", input)


def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    return _own(mv.unsqueeze(input, dim), "UnsqueezeBackward0_copy", input)


def view_as_complex_copy(input: Tensor) -> Tensor:
    return _own(view_as_complex(input), "ViewAsComplexBackward0_copy", input)


def view_as_real_copy(input: Tensor) -> Tensor:
    return _own(view_as_real(input), "ViewAsRealBackward0_copy", input)


def view_copy(input: Tensor, size: Any = None, *, dtype: Any = None) -> Tensor:
    """``input.view(size)`` or ``input.view(dtype)`` (PyTorch's two overloads) as a copy."""
    if (size is None) == (dtype is None):
        raise TypeError("view_copy() takes one of size and dtype")
    return _own(input.view(size if dtype is None else dtype), "ViewBackward0_copy", input)
