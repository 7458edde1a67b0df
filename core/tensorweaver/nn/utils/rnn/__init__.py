"""Variable-length sequence batches (``tw.nn.utils.rnn``), as ``torch.nn.utils.rnn``."""

from tensorweaver.nn.utils.rnn.packed_sequence import PackedSequence, invert_permutation
from tensorweaver.nn.utils.rnn.packing import (
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    unpack_sequence,
)
from tensorweaver.nn.utils.rnn.padding import pad_sequence, unpad_sequence

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]
