"""PyTorch's ``unsafe_split``, ``unsafe_split_with_sizes`` and ``unsafe_chunk``: in
PyTorch, ``split``/``chunk`` whose pieces autograd does not track as views of the input
(so an in-place change of a piece is not checked against the others); here the pieces are
``split``'s and ``chunk``'s, which behave as views always."""

from __future__ import annotations

from collections.abc import Sequence

from tensorweaver.ops import views as vw
from tensorweaver.tensor import Tensor


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    return vw.split(input, split_size, dim)


def unsafe_split_with_sizes(
    input: Tensor, split_sizes: Sequence[int], dim: int = 0
) -> tuple[Tensor, ...]:
    return vw.split(input, list(split_sizes), dim)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    return vw.chunk(input, chunks, dim)
