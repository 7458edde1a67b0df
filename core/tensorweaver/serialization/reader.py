"""``tw.load``: a safetensors file back to the object ``tw.save`` stored, checked before use.

The safetensors library parses and validates the header (JSON, dtypes, shapes, and offsets
that tile the data exactly). Then come TensorWeaver's own checks: the bounds of
:mod:`.limits`, the dtypes it has, the header's checksum (:mod:`.document`). Then the
tensors' bytes are read, in file order, straight into host arrays (one copy; bfloat16 as raw
bits, which the library's NumPy reader cannot express) and checked against the data's
checksum before any tensor is made. Nothing in a file is ever executed (no pickle).
"""

from __future__ import annotations

import math
import os
import struct
import sys
from typing import Any, BinaryIO, Callable, NoReturn, Optional, Union

import numpy as np
import safetensors

from tensorweaver.serialization import document
from tensorweaver.serialization.codes import CODES, STORAGE, host_values
from tensorweaver.serialization.errors import SafetensorsError
from tensorweaver.serialization.limits import MAX_HEADER_BYTES, MAX_RANK, MAX_TENSORS
from tensorweaver.serialization.structure import rebuild

PathLike = Union[str, "os.PathLike[str]"]
Fail = Callable[[str], NoReturn]
# Each tensor's (dtype code, stored bytes as a host array), in file order.
Stored = dict[str, tuple[str, np.ndarray]]


def load(f: PathLike, device: Any = None, *, map_location: Any = None) -> Any:
    """Load what :func:`save` stored in ``f``, with its tensors on ``device``.

    ``device`` (or PyTorch's spelling ``map_location``) is any device spec (``"numpy"``,
    ``"torch:cpu"``, ``"cunumeric"``, a ``tw.device``); ``None`` means the current default
    device. A safetensors file written by another tool loads as a flat dict of tensors, in
    file order. Raises :class:`SafetensorsError` for a file that is not valid safetensors,
    exceeds TensorWeaver's bounds, or does not match the checksum it was saved with.
    """
    import tensorweaver as tw

    if device is not None and map_location is not None:
        raise TypeError("tw.load: pass device or map_location, not both")
    device = map_location if device is None else device
    path = os.fspath(f)
    stored, found = _read_file(path)

    def tensor(name: str) -> Any:
        code, data = stored[name]
        try:
            return tw.tensor(host_values(code, data), dtype=CODES[code], device=device)
        except TypeError as e:  # the device lacks the dtype (bfloat16 on NumPy, say)
            raise TypeError(
                f"tw.load: tensor {name!r} of {path!r} cannot be created: {e}; pass device= "
                "naming a device that has this dtype"
            ) from e

    if found is None:
        return {name: tensor(name) for name in stored}

    def fail(what: str) -> NoReturn:
        raise SafetensorsError(f"tw.load: {path!r} has a bad structure in its metadata: {what}")

    return rebuild(found.structure, stored, tensor, fail)


def _read_file(path: str) -> tuple[Stored, Optional[document.Document]]:
    """Every tensor of the file at ``path`` and TensorWeaver's metadata entry, all checked."""

    def fail(what: str) -> NoReturn:
        raise _error(path, what)

    with open(path, "rb") as f:
        before = os.fstat(f.fileno())
        start = 8 + _header_length(f, before.st_size, fail)
        # The library opens the file by its name: it must have parsed the file ``f`` is.
        metadata, table = _parse(path, fail)
        if _version(before) != _version(os.stat(path)):
            fail("changed while it was being read (a concurrent save?); load it again")
        found = document.find(metadata, table, fail)
        f.seek(start)
        arrays = {name: _read_array(f, code, shape, fail) for name, (code, shape) in table.items()}
    if found is not None and found.data_sha256 is not None:
        document.verify_data(found.data_sha256, arrays, fail)
    return {name: (table[name][0], a) for name, a in arrays.items()}, found


def _error(path: str, what: str) -> SafetensorsError:
    return SafetensorsError(f"tw.load: {path!r} {what}")


def _version(st: os.stat_result) -> tuple[int, ...]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _header_length(f: BinaryIO, size: int, fail: Fail) -> int:
    """The header length of the file ``f`` of ``size`` bytes, within bounds."""
    prefix = f.read(8)
    if len(prefix) < 8:
        fail(
            f"is not a valid safetensors file: truncated: it has {size} bytes, fewer than the "
            "8-byte header length"
        )
    (n,) = struct.unpack("<Q", prefix)
    if n > size - 8:
        fail(
            f"is not a valid safetensors file: the header length {n} runs past the end of the "
            f"file ({size} bytes; truncated, or not safetensors){_not_safetensors_hint(prefix)}"
        )
    if n > MAX_HEADER_BYTES:
        fail(
            f"cannot be loaded: its header takes {n} bytes, more than the {MAX_HEADER_BYTES} "
            "TensorWeaver reads (tensorweaver.serialization.limits)"
        )
    return n


def _not_safetensors_hint(prefix: bytes) -> str:
    if prefix.startswith(b"PK\x03\x04") or prefix.startswith(b"\x80"):
        return (
            "; it looks like a pickle/zip checkpoint (torch.save's format), which TensorWeaver "
            "never loads because unpickling runs code: save it as safetensors instead"
        )
    return ""


def _parse(path: str, fail: Fail) -> tuple[dict[str, str], dict[str, tuple[str, list[int]]]]:
    """The metadata and each tensor's (dtype code, shape) in file order, checked."""
    try:
        lib = safetensors.safe_open(path, framework="numpy")
    except safetensors.SafetensorError as e:
        raise _error(path, f"is not a valid safetensors file: {e}") from e
    with lib:
        metadata = lib.metadata() or {}
        names = lib.offset_keys()
        if len(names) > MAX_TENSORS:
            fail(
                f"cannot be loaded: it holds {len(names)} tensors, more than the {MAX_TENSORS} "
                "TensorWeaver reads in one file (tensorweaver.serialization.limits)"
            )
        table = {}
        for name in names:
            entry = lib.get_slice(name)
            table[name] = (entry.get_dtype(), entry.get_shape())
    for name, (code, shape) in table.items():
        _check_entry(name, code, shape, fail)
    return metadata, table


def _check_entry(name: str, code: str, shape: list[int], fail: Fail) -> None:
    """Raise through ``fail`` unless TensorWeaver can hold this valid safetensors entry."""
    if code not in CODES:
        fail(
            f"cannot be loaded: tensor {name!r} has dtype {code}, which TensorWeaver does "
            f"not have (it reads {', '.join(CODES)})"
        )
    if len(shape) > MAX_RANK:
        fail(
            f"cannot be loaded: tensor {name!r} has {len(shape)} dimensions, more than the "
            f"{MAX_RANK} TensorWeaver reads"
        )
    # An empty tensor's other dimensions still size its strides; they must fit an index.
    if math.prod(max(n, 1) for n in shape) * STORAGE[code].itemsize > sys.maxsize:
        fail(
            f"cannot be loaded: tensor {name!r} has shape {shape}, whose strides do not fit "
            "a 64-bit index"
        )


def _read_array(f: BinaryIO, code: str, shape: list[int], fail: Fail) -> np.ndarray:
    """The next tensor's bytes from ``f`` (the library checked that each follows the last)."""
    a = np.empty(shape, dtype=STORAGE[code])
    if a.nbytes and f.readinto(a.reshape(-1).view(np.uint8)) != a.nbytes:
        fail("changed while it was being read (truncated by another writer?); load it again")
    return a
