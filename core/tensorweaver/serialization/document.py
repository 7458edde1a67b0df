"""The metadata entry ``tw.save`` writes: the object's structure and its checksums.

The entry ``"tensorweaver"`` (:data:`KEY`) holds the compact JSON text
``{"format": "tensorweaver/2", "sha256": {"header": hex, "data": hex}, "structure": node}``
(``node`` as in :mod:`.structure`). The format is ``"tensorweaver/3"`` where the structure
holds modules, parameters, dtypes or named functions, and ``"tensorweaver/3.1"`` where it holds
the node kinds added after TensorWeaver 0.3.0 (a tensor that requires grad, a ``tw.Size``, a
set, bytes, a complex number), ``"tensorweaver/3.2"`` where tensors share memory (stored once:
:mod:`.storages`) or it holds an empty OrderedDict: a TensorWeaver that cannot rebuild them
says to upgrade rather than calling the file damaged, and a state dict's file stays what
earlier versions read.

One entry rather than several: the library writes the metadata object from a hash map, in an
order that changes from call to call, and a single entry keeps the file of a given state the
same bytes.

The checksums are SHA-256 digests, verified by ``load`` before it makes any tensor:

- ``header``: of the compact ASCII JSON text ``[key, format, structure, [[name, dtype code,
  shape] of each tensor, in name order]]``, ``key`` being the entry's key: everything the
  header decides about the loaded object. Other tools' metadata entries are not covered:
  ``load`` ignores them.
- ``data``: of each tensor's bytes, in name order (code point order). Name order, not file
  order: the library lays the data out as it likes, and hashing tensor by tensor ties each
  name to its own bytes whatever the layout. Offsets need no digest of their own: the library
  checks that the tensors tile the data exactly, and any other tiling gives a name other bytes.

SHA-256 rather than BLAKE2: hashlib's OpenSSL SHA-256 uses the CPU's SHA instructions (x86
SHA-NI, ARMv8): 1.8 GB/s against BLAKE2b's 0.7 GB/s on this project's machines.

``load`` finds the entry by its key or, where a damaged bit changed the key, by the first bytes
of its value; the header digest, which covers the key, then fails. A file without the entry is
another tool's (it loads as a flat dict), or TensorWeaver 0.3's, whose entry
``"tensorweaver.structure"`` (:data:`LEGACY_KEY`) holds the structure's JSON alone: it is
rebuilt, unchecked.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Callable, NamedTuple, NoReturn, Optional

import numpy as np

KEY = "tensorweaver"
LEGACY_KEY = "tensorweaver.structure"
FORMAT = "tensorweaver/2"
FORMAT_MODULES = "tensorweaver/3"
FORMAT_VALUES = "tensorweaver/3.1"
FORMAT_SHARED = "tensorweaver/3.2"
FORMAT_LAZY = "tensorweaver/3.3"
FORMAT_DEVICES = "tensorweaver/3.4"
FORMAT_SPARSE = "tensorweaver/3.5"
#: Every format this version writes and reads, oldest first; each reader reads those before it.
FORMATS = (
    FORMAT,
    FORMAT_MODULES,
    FORMAT_VALUES,
    FORMAT_SHARED,
    FORMAT_LAZY,
    FORMAT_DEVICES,
    FORMAT_SPARSE,
)
Fail = Callable[[str], NoReturn]
# Each tensor's dtype code and shape, by name.
Table = Mapping[str, tuple[str, list[int]]]

_SIGNATURE = '{"format":"tensorweaver/'
_HEX = frozenset("0123456789abcdef")
_RESTORE = "restore it from a good copy"


class Document(NamedTuple):
    """What ``load`` needs from the entry: the structure, and the data's expected digest
    (None for a file saved without checksums)."""

    structure: Any
    data_sha256: Optional[str]


def make(
    structure: Any, table: Table, arrays: Mapping[str, np.ndarray], *, version: str = FORMAT
) -> dict[str, str]:
    """The metadata of a file of ``structure`` over tensors with these dtypes, shapes, bytes;
    ``version``: the oldest of :data:`FORMATS` whose readers know the structure's node kinds."""
    header = _header_sha256(KEY, version, structure, table)
    digests = {"header": header, "data": data_sha256(arrays)}
    return {KEY: _dumps({"format": version, "sha256": digests, "structure": structure})}


def find(metadata: Mapping[str, str], table: Table, fail: Fail) -> Optional[Document]:
    """The file's entry, its header verified; None for another tool's file."""
    if KEY in metadata:
        return _checked(KEY, metadata[KEY], table, fail)
    for key, text in metadata.items():
        if text.startswith(_SIGNATURE):
            return _checked(key, text, table, fail)
    if LEGACY_KEY in metadata:
        try:
            return Document(json.loads(metadata[LEGACY_KEY]), None)
        except (ValueError, RecursionError) as e:
            fail(f"has a bad {LEGACY_KEY!r} entry: not valid JSON ({e})")
    return None


def data_sha256(arrays: Mapping[str, np.ndarray]) -> str:
    """The hex SHA-256 of the C-ordered arrays' bytes, in name order."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        digest.update(arrays[name].reshape(-1).view(np.uint8))
    return digest.hexdigest()


def verify_data(expected: str, arrays: Mapping[str, np.ndarray], fail: Fail) -> None:
    """Raise through ``fail`` unless the tensors' bytes have the digest ``expected``."""
    if data_sha256(arrays) != expected:
        fail(
            "is damaged: its tensor data does not match the SHA-256 checksum stored when it "
            f"was saved (bits changed on disk or in transfer); {_RESTORE}"
        )


def _checked(key: str, text: str, table: Table, fail: Fail) -> Document:
    try:
        entry = json.loads(text)
    except (ValueError, RecursionError):
        entry = None
    # The format first: a newer one may hold other fields.
    if isinstance(entry, dict) and entry.get("format", FORMAT) not in FORMATS:
        fail(
            f"has format {entry['format']!r}, which this TensorWeaver does not read (it reads "
            f"{', '.join(map(repr, FORMATS))}): upgrade TensorWeaver, or the file is damaged"
        )
    if not (isinstance(entry, dict) and set(entry) == {"format", "sha256", "structure"}):
        fail(f"is damaged: its {key!r} metadata entry is malformed; {_RESTORE}")
    digests = entry["sha256"]
    if not (
        isinstance(digests, dict)
        and set(digests) == {"header", "data"}
        and all(isinstance(v, str) and len(v) == 64 and set(v) <= _HEX for v in digests.values())
    ):
        fail(f"is damaged: the checksums of its {key!r} metadata entry are malformed; {_RESTORE}")
    if _header_sha256(key, entry["format"], entry["structure"], table) != digests["header"]:
        fail(
            "is damaged: its header (tensor names, dtypes, shapes or structure) does not match "
            f"the SHA-256 checksum stored when it was saved; {_RESTORE}"
        )
    return Document(entry["structure"], digests["data"])


def _header_sha256(key: str, version: str, structure: Any, table: Table) -> str:
    tensors = [[name, code, list(shape)] for name, (code, shape) in sorted(table.items())]
    return hashlib.sha256(_dumps([key, version, structure, tensors]).encode("ascii")).hexdigest()


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))
