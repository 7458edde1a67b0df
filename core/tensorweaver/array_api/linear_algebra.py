"""Linear algebra in the main namespace: ``matmul``, ``matrix_transpose``, ``tensordot``,
``vecdot``."""

from __future__ import annotations

from typing import Union

import tensorweaver as tw
from tensorweaver.array_api.elementwise import promoted
from tensorweaver.tensor import Tensor


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The matrix product of ``x1`` and ``x2`` (batched, 1-d operands as vectors)."""
    a, b = promoted(x1, x2)
    return tw.matmul(a, b)


def matrix_transpose(x: Tensor, /) -> Tensor:
    """``x`` with its last two axes swapped."""
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: needs at least 2 dimensions, got shape {x.shape}")
    return x.mT


def tensordot(x1: Tensor, x2: Tensor, /, *, axes: Union[int, tuple] = 2) -> Tensor:
    """The sum of products over ``axes`` (the last ``axes`` of ``x1`` and first of ``x2``,
    or two sequences of axes)."""
    a, b = promoted(x1, x2)
    return tw.tensordot(a, b, dims=axes)


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The dot product of vectors along ``axis`` (after broadcasting)."""
    a, b = promoted(x1, x2)
    if a.shape[axis] != b.shape[axis]:
        raise ValueError(
            f"vecdot: the arrays of shapes {tuple(a.shape)} and {tuple(b.shape)} differ in "
            f"size along axis {axis}"
        )
    if a.dtype.is_complex:  # the standard's vecdot conjugates x1
        a = tw.conj_physical(a)
    return (a * b).sum(axis, dtype=a.dtype)  # integers stay in their dtype
