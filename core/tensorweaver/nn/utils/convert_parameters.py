"""Flatten parameters into one vector and back (``parameters_to_vector``,
``vector_to_parameters``)."""

from __future__ import annotations

from collections.abc import Iterable

import tensorweaver as tw
from tensorweaver.tensor import Tensor


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated, in iteration order (differentiable)."""
    return tw.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Replace each parameter's data by consecutive slices of ``vec`` (along its first
    dimension), as PyTorch does: the parameters take ``vec``'s dtype; elements left over
    after the last parameter are ignored."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected tw.Tensor, but got: {type(vec).__name__}")
    offset = 0
    with tw.no_grad():
        for p in parameters:
            n = p.numel()
            piece = vec[offset : offset + n]
            if piece.numel() != n:
                raise RuntimeError(
                    f"vector_to_parameters: shape {list(p.shape)} is invalid for input of size "
                    f"{piece.numel()} (vec {tuple(vec.shape)} ends after {offset} elements)"
                )
            p.data = piece.reshape(tuple(p.shape))
            offset += n
