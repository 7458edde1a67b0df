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

    def cpu(self) -> PackedSequence:
        return self.to(self.data.cpu().device)

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self.to(self.data.cuda(*args, **kwargs).device)

    def pin_memory(self) -> PackedSequence:
        """``data`` and the indices in pinned memory (``batch_sizes`` as it is)."""
        sorted_indices, unsorted_indices = (
            None if i is None else i.pin_memory()
            for i in (self.sorted_indices, self.unsorted_indices)
        )
        return type(self)(
            self.data.pin_memory(), self.batch_sizes, sorted_indices, unsorted_indices
        )

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a CUDA device."""
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()

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

    def short(self) -> PackedSequence:
        return self.to(tw.int16)

    def char(self) -> PackedSequence:
        return self.to(tw.int8)

    def byte(self) -> PackedSequence:
        return self.to(tw.uint8)
