"""Packing padded batches into ``PackedSequence`` and back.

Both directions are one gather (advanced indexing) over index lists built in Python from the
lengths, so autograd follows them on every backend."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Optional, Union

import tensorweaver as tw
from tensorweaver.nn.utils.rnn.packed_sequence import PackedSequence
from tensorweaver.nn.utils.rnn.padding import lengths_list, pad_sequence, unpad_sequence
from tensorweaver.tensor import Tensor


def _index(values: list[int], like: Tensor) -> Tensor:
    return tw.tensor(values, dtype=tw.int64, device=like.device)


def sorted_lengths(batch_sizes: list[int]) -> list[int]:
    """The length of each sequence in packed (longest first) order."""
    return [sum(size > i for size in batch_sizes) for i in range(batch_sizes[0])]


def packed_from_padded(
    padded: Tensor, batch_sizes: list[int], order: Sequence[int], batch_first: bool
) -> Tensor:
    """The packed ``data`` of ``padded``, where ``order[i]`` is the batch column of the
    ``i``-th longest sequence."""
    times = [t for t, size in enumerate(batch_sizes) for _ in range(size)]
    columns = [order[i] for size in batch_sizes for i in range(size)]
    rows = (columns, times) if batch_first else (times, columns)
    return padded[_index(rows[0], padded), _index(rows[1], padded)]


def padded_from_packed(
    data: Tensor,
    batch_sizes: list[int],
    positions: Sequence[int],
    total_length: int,
    batch_first: bool,
    padding_value: float,
) -> Tensor:
    """The padded ``(T, N, *)`` (``(N, T, *)`` with ``batch_first``) tensor of packed ``data``,
    where ``positions[b]`` is the packed position of batch column ``b``."""
    starts = list(itertools.accumulate([0, *batch_sizes]))
    lengths = sorted_lengths(batch_sizes)
    pad_row = data.shape[0]  # the index of the padding row appended below

    def source(t: int, b: int) -> int:
        i = positions[b]
        return starts[t] + i if t < lengths[i] else pad_row

    batch = len(positions)
    if batch_first:
        index = [source(t, b) for b in range(batch) for t in range(total_length)]
    else:
        index = [source(t, b) for t in range(total_length) for b in range(batch)]
    fill = tw.full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    rows = tw.cat([data, fill])[_index(index, data)]
    outer = (batch, total_length) if batch_first else (total_length, batch)
    return rows.reshape(*outer, *data.shape[1:])


def pack_padded_sequence(
    input: Tensor,
    lengths: Union[Tensor, list[int]],
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Pack a padded batch ``(T, N, *)`` (``(N, T, *)`` with ``batch_first``) of sequences of
    the given ``lengths``. With ``enforce_sorted`` the lengths must be decreasing; otherwise
    the batch is sorted here and the permutation kept in the result."""
    # unsorted, PyTorch selects columns by the sorted lengths: index_select's IndexError
    not_1d = RuntimeError if enforce_sorted else IndexError
    sizes = lengths_list(lengths, "pack_padded_sequence", not_1d)
    batch_dim, time_dim = (0, 1) if batch_first else (1, 0)
    if input.dim() < 2:
        raise IndexError(  # PyTorch's class
            f"pack_padded_sequence: input of shape {tuple(input.shape)} has no dimension "
            f"{max(batch_dim, time_dim)}; give (T, N, *) or, with batch_first, (N, T, *)"
        )
    batch = input.shape[batch_dim]
    if enforce_sorted:
        order, sorted_indices = list(range(len(sizes))), None
    else:
        # PyTorch selects the batch's columns in sorted order before any check, so fewer
        # lengths than columns pack the first ones; more cannot be selected.
        order = sorted(range(len(sizes)), key=lambda b: -sizes[b])
        if len(sizes) > batch:  # PyTorch's index_select: IndexError in dim 0, else RuntimeError
            raise (IndexError if batch_dim == 0 else RuntimeError)(
                f"pack_padded_sequence: got {len(sizes)} lengths for input of shape "
                f"{tuple(input.shape)} with batch_first={batch_first}: index out of range in "
                f"dimension {batch_dim}"
            )
        sorted_indices = _index(order, input)
        sizes = [sizes[b] for b in order]
    if (enforce_sorted and len(sizes) != batch) or not sizes:
        raise RuntimeError(  # PyTorch's class
            f"pack_padded_sequence: got {len(sizes)} lengths for input of shape "
            f"{tuple(input.shape)} with batch_first={batch_first}; give one length per "
            f"sequence (dimension {batch_dim})"
        )
    if min(sizes) <= 0:
        raise RuntimeError(
            f"pack_padded_sequence: every length must be greater than 0, got {sizes}"
        )
    if max(sizes) > input.shape[time_dim]:
        raise RuntimeError(
            f"pack_padded_sequence: a length ({max(sizes)}) exceeds the input's time "
            f"dimension {time_dim} of size {input.shape[time_dim]} (shape {tuple(input.shape)})"
        )
    if any(a < b for a, b in zip(sizes, sizes[1:])):
        raise RuntimeError(
            f"pack_padded_sequence: lengths {sizes} must be sorted in decreasing order "
            "when enforce_sorted=True; pass enforce_sorted=False to have them sorted here"
        )
    batch_sizes = [sum(n > t for n in sizes) for t in range(max(sizes))]
    data = packed_from_padded(input, batch_sizes, order, batch_first)
    return PackedSequence(data, _index(batch_sizes, input), sorted_indices, None)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: Optional[int] = None,
) -> tuple[Tensor, Tensor]:
    """The inverse of ``pack_padded_sequence``: the padded batch in its original order and
    the lengths; ``total_length`` pads the time dimension further."""
    batch_sizes = sequence.batch_sizes.tolist()
    if total_length is None:
        total_length = len(batch_sizes)
    elif total_length < len(batch_sizes):
        raise ValueError(
            f"pad_packed_sequence: total_length={total_length} is shorter than the longest "
            f"sequence ({len(batch_sizes)}); pass at least that, or None"
        )
    unsorted = sequence.unsorted_indices
    positions = list(range(batch_sizes[0])) if unsorted is None else unsorted.tolist()
    padded = padded_from_packed(
        sequence.data, batch_sizes, positions, total_length, batch_first, padding_value
    )
    lengths = sorted_lengths(batch_sizes)
    return padded, _index([lengths[i] for i in positions], sequence.data)


def pack_sequence(sequences: list[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences ``(L_i, *)`` (decreasing lengths unless ``enforce_sorted`` is
    False)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The inverse of ``pack_sequence``: the list of sequences in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
