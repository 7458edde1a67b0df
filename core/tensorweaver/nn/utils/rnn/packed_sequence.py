"""``PackedSequence``: a batch of variable-length sequences stored without padding."""

from __future__ import annotations

from collections import namedtuple
from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.tensor import Tensor


def invert_permutation(permutation: Optional[Tensor]) -> Optional[Tensor]:
    """The permutation that undoes ``permutation`` (None stays None)."""
    if permutation is None:
        return None
    return tw.argsort(permutation)


class PackedSequence(
    namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])
):
    """Sequences of a batch interleaved step by step, as PyTorch's.

    ``data`` holds, for each time step ``t``, the ``batch_sizes[t]`` sequences still running
    (longest first); ``sorted_indices[i]`` is the batch position of the ``i``-th longest
    sequence and ``unsorted_indices`` its inverse (both None when the batch came sorted).
    Build one with ``pack_padded_sequence`` or ``pack_sequence``, not directly."""

    def __new__(
        cls,
        data: Tensor,
        batch_sizes: Optional[Tensor] = None,
        sorted_indices: Optional[Tensor] = None,
        unsorted_indices: Optional[Tensor] = None,
    ) -> PackedSequence:
        if batch_sizes is None:
            raise TypeError(
                "PackedSequence: batch_sizes is required; build packed sequences with "
                "pack_padded_sequence or pack_sequence"
            )
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data`` converted by ``Tensor.to(*args, **kwargs)``; the indices follow it to its
        device, ``batch_sizes`` stays where it is (as in PyTorch, where it stays on the CPU)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices, unsorted_indices = (
            None if i is None else i.to(data.device)
            for i in (self.sorted_indices, self.unsorted_indices)
        )
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def double(self) -> PackedSequence:
        return self.to(tw.float64)

    def float(self) -> PackedSequence:
        return self.to(tw.float32)

    def half(self) -> PackedSequence:
        return self.to(tw.float16)

    def long(self) -> PackedSequence:
        return self.to(tw.int64)

    def int(self) -> PackedSequence:
        return self.to(tw.int32)
