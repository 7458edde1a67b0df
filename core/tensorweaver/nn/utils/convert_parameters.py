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
    """Copy consecutive slices of the 1-D ``vec`` into ``parameters`` (in place)."""
    if not isinstance(vec, Tensor):
        raise TypeError(
            f"vector_to_parameters: expected vec to be a Tensor, got {type(vec).__name__}"
        )
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.dim() != 1 or vec.numel() != total:
        raise ValueError(
            f"vector_to_parameters: vec must be 1-D with {total} elements (the parameters' "
            f"total), got shape {tuple(vec.shape)}"
        )
    offset = 0
    with tw.no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[offset : offset + n].reshape(tuple(p.shape)))
            offset += n
