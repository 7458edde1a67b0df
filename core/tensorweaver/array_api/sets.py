"""Set functions: ``isin``, ``unique_all``, ``unique_counts``, ``unique_inverse``,
``unique_values``."""

from __future__ import annotations

from typing import NamedTuple, Union

import tensorweaver as tw
from tensorweaver.array_api.elementwise import promoted
from tensorweaver.ops.order_stats import sorted_position
from tensorweaver.tensor import Tensor


class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def unique_all(x: Tensor, /) -> UniqueAllResult:
    """The sorted unique values, the index of each one's first occurrence in the flattened
    ``x``, each element's index into the values (in ``x``'s shape) and the counts."""
    values, inverse, counts = tw.unique(x.reshape(-1), return_inverse=True, return_counts=True)
    # Stable order of the flattened x by value: each value's run starts at its first place.
    order = tw.argsort(inverse, stable=True)
    starts = tw.cumsum(counts, 0) - counts
    return UniqueAllResult(values, order[starts], inverse.reshape(x.shape), counts)


def unique_counts(x: Tensor, /) -> UniqueCountsResult:
    """The sorted unique values and how often each occurs."""
    values, counts = tw.unique(x.reshape(-1), return_counts=True)
    return UniqueCountsResult(values, counts)


def unique_inverse(x: Tensor, /) -> UniqueInverseResult:
    """The sorted unique values and each element's index into them (in ``x``'s shape)."""
    values, inverse = tw.unique(x.reshape(-1), return_inverse=True)
    return UniqueInverseResult(values, inverse.reshape(x.shape))


def unique_values(x: Tensor, /) -> Tensor:
    """The sorted unique values."""
    return tw.unique(x.reshape(-1))


def isin(x1: Union[Tensor, int], x2: Union[Tensor, int], /, *, invert: bool = False) -> Tensor:
    """Whether each element of ``x1`` equals some element of ``x2`` (``invert``: does not)."""
    a, b = promoted(x1, x2)
    values = tw.sort(b.reshape(-1))[0]
    if values.shape[0] == 0:
        found = tw.zeros_like(a, dtype=tw.bool)
    else:
        # The place each element would go in the sorted values holds it, if any does.
        place = sorted_position(values, a.reshape(-1)).clamp(max=values.shape[0] - 1)
        found = (values[place] == a.reshape(-1)).reshape(a.shape)
    return ~found if invert else found
