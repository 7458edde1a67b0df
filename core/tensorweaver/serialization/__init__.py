"""``tw.save`` / ``tw.load``: state dicts as safetensors files, with their structure and checksums.

A safetensors file is an 8-byte little-endian header length ``N``, ``N`` bytes of UTF-8 JSON,
then the raw little-endian tensor bytes. The header maps each tensor name to
``{"dtype", "shape", "data_offsets"}`` plus an optional ``"__metadata__"`` object of string →
string. The safetensors library writes the file and parses and validates it on load; this
package adds, in one metadata entry (:mod:`.document`):

- the object's structure around its tensors (:mod:`.structure`): nested state dicts, tuples,
  int keys, optimizer state come back exactly;
- SHA-256 checksums of the header and of the data, verified on load: a damaged file raises
  instead of loading other values. Files without them (written by other tools, or by
  TensorWeaver 0.3 and earlier) load unchecked.

Every fault of a file raises :class:`SafetensorsError` naming the file and the fault: not
valid safetensors, past the bounds of :mod:`.limits` (header size, tensor count, rank), a
dtype TensorWeaver lacks, a bad structure, or a checksum mismatch. Saving is atomic and
cleans up after a killed save (:mod:`.atomic`). Loading never executes code: no pickle.
"""

from __future__ import annotations

from tensorweaver.serialization.codes import bfloat16_bits, float32_from_bfloat16_bits
from tensorweaver.serialization.errors import SafetensorsError
from tensorweaver.serialization.reader import load
from tensorweaver.serialization.writer import save

__all__ = [
    "SafetensorsError",
    "bfloat16_bits",
    "float32_from_bfloat16_bits",
    "load",
    "save",
]
