"""``pad_sequence`` and ``unpad_sequence``: a list of variable-length sequences to and from one
padded tensor."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Union

import tensorweaver as tw
from tensorweaver.tensor import Tensor


def lengths_list(
    lengths: Union[Tensor, Sequence[int]], fn: str, not_1d: type[Exception] = RuntimeError
) -> list[int]:
    """``lengths`` (a 1-D tensor or array, or a sequence of ints) as Python ints (truncated,
    as PyTorch's conversion to int64); ``not_1d`` is the class raised for 2-D or more."""
    if hasattr(lengths, "tolist"):
        lengths = lengths.tolist()
    kind = type(lengths).__name__
    nested = isinstance(lengths, Sequence) and any(isinstance(n, (list, tuple)) for n in lengths)
    if isinstance(lengths, (int, float)) or nested:
        raise (not_1d if nested else RuntimeError)(  # PyTorch's classes
            f"{fn}: the 'lengths' argument should be 1-D (one length per sequence), got {lengths!r}"
        )
    # PyTorch makes a tensor of it: no str, set, dict or one-pass iterator (read once here)
    if not isinstance(lengths, Sequence) or isinstance(lengths, (str, bytes)):
        raise TypeError(f"{fn}: lengths must be a 1-D tensor or a list of ints, got {kind}")
    try:
        return [int(n) for n in lengths]
    except TypeError as err:
        raise TypeError(
            f"{fn}: lengths must be a 1-D tensor or a list of ints, got {kind}"
        ) from err


def pad_sequence(
    sequences: Union[Tensor, list[Tensor]],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack sequences of shapes ``(L_i, *)`` into ``(L, N, *)`` (``(N, L, *)`` with
    ``batch_first``), ``L = max L_i``, filling with ``padding_value`` on ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(  # PyTorch's class
            f"pad_sequence: padding_side must be 'left' or 'right', got {padding_side!r}"
        )
    seqs = list(sequences.unbind(0) if isinstance(sequences, Tensor) else sequences)
    if not seqs:
        raise RuntimeError("pad_sequence: got no sequences; pass a non-empty list of tensors")
    trailing = tuple(seqs[0].shape[1:])
    shapes = [tuple(s.shape) for s in seqs]
    if any(s.dim() == 0 or tuple(s.shape[1:]) != trailing for s in seqs):
        raise RuntimeError(
            f"pad_sequence: sequences must have shapes (L_i, *) with the same trailing "
            f"dimensions, got {shapes}"
        )
    length = max(s.shape[0] for s in seqs)
    dtype = seqs[0].dtype  # PyTorch's: the first sequence's, whatever the others'
    padded = []
    for s in seqs:
        rows = s if s.dtype == dtype else s.to(dtype)
        missing = length - s.shape[0]
        if missing:
            # tw.cat leaves a 1-D empty tensor out of its result (and so out of the graph: no
            # gradient for an empty sequence); one of shape (0, width) stays in
            empty = not s.shape[0]
            if empty:
                rows = rows.reshape(0, math.prod(trailing))
            fill = tw.full((missing, *rows.shape[1:]), padding_value, dtype=dtype, device=s.device)
            rows = tw.cat([rows, fill] if padding_side == "right" else [fill, rows])
            if empty:
                rows = rows.reshape(length, *trailing)
        padded.append(rows)
    return tw.stack(padded, dim=0 if batch_first else 1)


def unpad_sequence(
    padded_sequences: Tensor,
    lengths: Union[Tensor, list[int]],
    batch_first: bool = False,
) -> list[Tensor]:
    """The inverse of ``pad_sequence`` (right padding): the ``N`` sequences of
    ``padded_sequences`` cut to their ``lengths``. With ``batch_first=False`` it transposes
    ``padded_sequences`` itself to batch-first, in place, as PyTorch's does (so a leaf that
    requires grad raises there too)."""
    if not batch_first:
        padded_sequences.transpose_(0, 1)
    sizes = lengths_list(lengths, "unpad_sequence")
    return [seq[:n] for seq, n in zip(padded_sequences.unbind(0), sizes)]
