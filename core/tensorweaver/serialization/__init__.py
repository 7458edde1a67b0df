"""``tw.save`` / ``tw.load``: state dicts and whole modules as safetensors files, with their
structure and checksums, to paths or file objects.

A safetensors file is an 8-byte little-endian header length ``N``, ``N`` bytes of UTF-8 JSON,
then the raw little-endian tensor bytes. The header maps each tensor name to
``{"dtype", "shape", "data_offsets"}`` plus an optional ``"__metadata__"`` object of string →
string. The safetensors library writes the file and parses and validates it on load; this
package adds, in one metadata entry (:mod:`.document`):

- the object's structure around its tensors (:mod:`.structure`): nested state dicts, tuples,
  int keys, optimizer state, and whole modules (:mod:`.module_state`) come back exactly;
- SHA-256 checksums of the header and of the data, verified on load: a damaged file raises
  instead of loading other values. Files without them (written by other tools, or by
  TensorWeaver 0.3 and earlier) load unchecked.

Every fault of a file raises :class:`SafetensorsError` naming the file and the fault: not
valid safetensors, past the bounds of :mod:`.limits` (header size, tensor count, rank), a
dtype TensorWeaver lacks, a bad structure, or a checksum mismatch. Saving to a path is atomic
and cleans up after a killed save (:mod:`.atomic`); file objects: :mod:`.streams`.

Threat model. A checkpoint may come from anyone; loading it must not run code its author
chose. PyTorch's pickle checkpoints run code by design, and its ``weights_only`` unpickler
narrows that to allowed globals. ``tw.load`` has no pickle at all: a file is data (JSON and
bytes), checked for size and integrity before use, and the only objects it can produce are
tensors, Parameters, Python containers and scalars (sets, bytes, complex numbers and
``tw.Size`` among them), dtypes, devices, and objects the allow-list (:mod:`.allowlist`) holds,
looked up by name among classes and functions the process has already imported (a file
never makes anything get imported). A saved module is rebuilt from
an allowed ``tw.nn.Module`` subclass by ``object.__new__`` and by filling its ``__dict__``:
no ``__init__``, ``__new__``, ``__setattr__`` or ``__setstate__`` of the class runs, and an
allowed function stored as an attribute is assigned, never called. What remains is trust in
the allowed classes' own code, which runs when the loaded module is used: allow only classes
you trust. The checksums detect damage, not forgery: anyone can write a valid file.
"""

from __future__ import annotations

from tensorweaver.serialization.allowlist import (
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)
from tensorweaver.serialization.codes import bfloat16_bits, float32_from_bfloat16_bits
from tensorweaver.serialization.errors import SafetensorsError
from tensorweaver.serialization.reader import get_unsafe_globals_in_checkpoint, load
from tensorweaver.serialization.writer import save

__all__ = [
    "SafetensorsError",
    "add_safe_globals",
    "bfloat16_bits",
    "clear_safe_globals",
    "float32_from_bfloat16_bits",
    "get_safe_globals",
    "get_unsafe_globals_in_checkpoint",
    "load",
    "safe_globals",
    "save",
]
