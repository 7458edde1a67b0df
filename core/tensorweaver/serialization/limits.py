"""Bounds on what a checkpoint may hold, checked by ``tw.save`` and before ``tw.load`` does work.

A file's header is parsed before anything in it can be checked, so its size is bounded first,
from the 8-byte length alone: 16 MiB holds the header of any real model and its optimizer
state, while a header of a million tiny entries (58 MB) would take the parser seconds and a
GiB. The tensor count then bounds the work per entry.
"""

from __future__ import annotations

# The header's JSON, in bytes (the safetensors library itself refuses over 100 MB).
MAX_HEADER_BYTES = 16 * 2**20
# Tensors in one file.
MAX_TENSORS = 100_000
# Dimensions of one tensor: the most NumPy 1.x can describe, more than any backend declares.
MAX_RANK = 32
# Elements the views of one file (tensors sharing memory: :mod:`.storages`) may hold beyond
# their storages' (a broadcast, a zero-size view's dimensions): a view holds its own copy, so
# this bounds what a small header can make ``tw.load`` allocate and compute (128 MiB of
# float64, seconds).
MAX_VIEW_EXCESS = 2**24
