"""PyTorch's ``unsafe_split``, ``unsafe_split_with_sizes`` and ``unsafe_chunk``: in
PyTorch, ``split``/``chunk`` whose pieces autograd does not track as views of the input
(so an in-place change of a piece is not checked against the others); here the pieces are
``split``'s and ``chunk``'s, which behave as views always, their graph node named as
PyTorch's (``UnsafeSplitBackward0``, ``UnsafeSplitWithSizesBackward0``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensorweaver.autograd.node import Node
from tensorweaver.ops import movement as mv
from tensorweaver.ops import views as vw
from tensorweaver.tensor import Tensor


def _renamed(pieces: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    """``pieces``, their node (one for several: its ``view``) named as the unsafe op's."""
    for piece in pieces:
        node = piece._node
        if node is not None and node.label is not None:
            node.label = _UNSAFE.get(node.label, node.label)
            group = node.view
            if isinstance(group, Node):
                group.label = node.label
    return pieces


#: split's node names, and the unsafe ops' names for them.
_UNSAFE = {
    "SplitBackward0": "UnsafeSplitBackward0",
    "SplitWithSizesBackward0": "UnsafeSplitWithSizesBackward0",
}


def unsafe_split(
    input: Tensor, split_size: int, dim: int = 0, **aliases: Any
) -> tuple[Tensor, ...]:
    if aliases:
        dim = mv.dim_alias("unsafe_split", aliases, dim, 0)
    return _renamed(vw.split(input, split_size, dim))


def unsafe_split_with_sizes(
    input: Tensor, split_sizes: Sequence[int], dim: int = 0, **aliases: Any
) -> tuple[Tensor, ...]:
    if aliases:
        dim = mv.dim_alias("unsafe_split_with_sizes", aliases, dim, 0)
    return _renamed(vw.split(input, list(split_sizes), dim))


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0, **aliases: Any) -> tuple[Tensor, ...]:
    if aliases:
        dim = mv.dim_alias("unsafe_chunk", aliases, dim, 0)
    return _renamed(vw.chunk(input, chunks, dim))
