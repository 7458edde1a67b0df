"""PyTorch's ``unsafe_split``, ``unsafe_split_with_sizes`` and ``unsafe_chunk``: the pieces of
``split``/``chunk`` over the input's memory, which autograd does not track as views of it.

So, as PyTorch's, each piece shares the input's values both ways (an in-place change of
either shows in the other) but not its history nor its version counter: a piece may be
changed in place with grad enabled (a view of several would be refused), the change
recorded in the piece's own history alone, and a piece keeps its node
(``UnsafeSplitBackward0``, ``UnsafeSplitWithSizesBackward0``) when the input changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

from tensorweaver.ops import movement as mv
from tensorweaver.ops import views as vw
from tensorweaver.ops.several_outputs import record_pieces
from tensorweaver.tensor import Tensor, _axis, index_argument


def _unsafe(
    op: str, input: Tensor, dim: Any, aliases: dict, cut: Callable[[Tensor, int], tuple]
) -> tuple[Tensor, ...]:
    """``cut(memory, dim)``'s pieces of ``input``, as PyTorch's ``op`` returns them: each an
    alias with a version counter of its own (``.data``) of a view of an alias of ``input``
    that autograd does not see (``.data`` again), so that writes reach ``input`` and its
    changes reach the piece, unrecorded and uncounted; the pieces get one node on
    ``input``'s history (its label PyTorch's: split_with_sizes where the sizes were given or
    chunk cuts an empty dimension)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    d = _axis(mv.first_dim(op, aliases, dim), input.ndim, op)
    memory = input.data
    pieces = [view.data for view in cut(memory, d)]
    sized = op == "unsafe_split_with_sizes" or (op == "unsafe_chunk" and not input.shape[d])
    label = "UnsafeSplitWithSizesBackward0" if sized else "UnsafeSplitBackward0"
    record_pieces(input, pieces, d, False, label)
    return tuple(pieces)


def unsafe_split(
    input: Tensor, split_size: int, dim: int = mv._FIRST_DIM, **aliases: Any
) -> tuple[Tensor, ...]:
    # (an int as PyTorch's parser takes it: a NumPy integer or an integer tensor of one
    # element too, not a list of sizes)
    size = split_size
    if type(size) is not int:
        size = index_argument(size, "unsafe_split", "split_size")
    return _unsafe("unsafe_split", input, dim, aliases, lambda m, d: vw.split(m, size, d))


def unsafe_split_with_sizes(
    input: Tensor, split_sizes: Sequence[int], dim: int = mv._FIRST_DIM, **aliases: Any
) -> tuple[Tensor, ...]:
    sizes = mv.split_sizes("unsafe_split_with_sizes", split_sizes)
    return _unsafe(
        "unsafe_split_with_sizes", input, dim, aliases, lambda m, d: vw.split(m, sizes, d)
    )


def unsafe_chunk(
    input: Tensor, chunks: int, dim: int = mv._FIRST_DIM, **aliases: Any
) -> tuple[Tensor, ...]:
    count = chunks if type(chunks) is int else mv.chunk_count(chunks, "unsafe_chunk")
    return _unsafe("unsafe_chunk", input, dim, aliases, lambda m, d: vw.chunk(m, count, d))
