"""PyTorch's ``<view op>_copy`` functions (``permute_copy``, ``view_copy``, ``t_copy``, ...):
the view op's result as a tensor of its own, sharing no memory with the input, and
differentiable as the view op is."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensorweaver.ops import movement as mv
from tensorweaver.ops.complex import view_as_complex, view_as_real
from tensorweaver.ops.spellings import select
from tensorweaver.tensor import Tensor


def _copies(parts: Sequence[Tensor]) -> tuple[Tensor, ...]:
    return tuple(p.clone() for p in parts)


def alias_copy(input: Tensor) -> Tensor:
    return input.clone()


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return input.diagonal(offset, dim1, dim2).clone()


def expand_copy(input: Tensor, size: Sequence[int], *, implicit: bool = False) -> Tensor:
    return mv.expand(input, *size).clone()


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    return mv.narrow(input, dim, start, length).clone()


def permute_copy(input: Tensor, dims: Sequence[int]) -> Tensor:
    return mv.permute(input, *dims).clone()


def select_copy(input: Tensor, dim: int, index: int) -> Tensor:
    return select(input, dim, index).clone()


def slice_copy(
    input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
) -> Tensor:
    index = (slice(None),) * (dim % input.ndim) + (slice(start, end, step),)
    return input[index].clone()


def split_copy(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    return _copies(input.split(split_size, dim))


def split_with_sizes_copy(
    input: Tensor, split_sizes: Sequence[int], dim: int = 0
) -> tuple[Tensor, ...]:
    return _copies(input.split(list(split_sizes), dim))


def squeeze_copy(input: Tensor, dim: Any = None) -> Tensor:
    return mv.squeeze(input, dim).clone()


def t_copy(input: Tensor) -> Tensor:
    return mv.t(input).clone()


def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return mv.transpose(input, dim0, dim1).clone()


def unbind_copy(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    return _copies(input.unbind(dim))


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    return input.unfold(dimension, size, step).clone()


def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    return mv.unsqueeze(input, dim).clone()


def view_as_complex_copy(input: Tensor) -> Tensor:
    return view_as_complex(input).clone()


def view_as_real_copy(input: Tensor) -> Tensor:
    return view_as_real(input).clone()


def view_copy(input: Tensor, size: Any) -> Tensor:
    """``input.view(size)`` (or, given a dtype, ``input.view(dtype)``) as a copy."""
    return input.view(size).clone()
