"""``tw.load`` of a ``torch.save`` checkpoint (the zip format PyTorch writes since 1.6), without
running anything the file names.

The zip holds ``<archive>/data.pkl`` (the object, pickled), ``<archive>/data/<key>`` (each
storage's raw bytes), ``<archive>/byteorder`` and ``<archive>/version``. ``data.pkl`` is read
by :mod:`.torch_pickle`, whose globals resolve only through :mod:`.torch_globals`; each
persistent id ``("storage", <storage class>, key, location, numel)`` names a storage record.
Once the pickle is read, :mod:`.torch_tensors` makes the tensors, reading each storage once
from the zip straight into one host array (the record's bytes at their offset, its CRC-32
checked; the file is never read whole). A damaged zip, a compressed, missing or wrongly sized
record raise :class:`SafetensorsError`; a refused global or a malformed pickle raise
``pickle.UnpicklingError``. Pickles outside a zip (PyTorch before 1.6, or
``_use_new_zipfile_serialization=False``) and TorchScript archives are refused.
"""

from __future__ import annotations

import contextlib
import io
import struct
import zipfile
import zlib
from collections import Counter, OrderedDict
from collections.abc import Iterator
from pickle import UnpicklingError  # the exception type only: nothing here unpickles
from typing import IO, Any, Callable, NoReturn, Optional, Union

import numpy as np

from tensorweaver.serialization import torch_globals, torch_pickle
from tensorweaver.serialization.errors import SafetensorsError
from tensorweaver.serialization.limits import MAX_TENSORS
from tensorweaver.serialization.torch_globals import ParameterRecord, Storage, TensorRecord
from tensorweaver.serialization.torch_tensors import TensorMaker

Source = Union[str, bytes]
# The legacy format's first bytes: protocol 2, then the magic number 0x1950a86a20f9469cfc6c.
_LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error)
# How deep containers may nest (each level is a recursive call when tensors are filled in).
_MAX_DEPTH = 200


def kind(source: Source) -> Optional[str]:
    """``"zip"`` for a torch.save zip checkpoint, ``"legacy"`` for PyTorch's older pickle or
    tar format, None for anything else; ``source`` is a path or the file's bytes."""
    if isinstance(source, str):
        with open(source, "rb") as f:
            head = f.read(262)
    else:
        head = source[:262]
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    if head.startswith(_LEGACY_MAGIC) or head[257:262] == b"ustar":
        return "legacy"
    return None


def load(source: Source, where: str, map_location: Any, weights_only: Optional[bool]) -> Any:
    """The object the torch.save checkpoint ``source`` (a path or its bytes) holds, its
    tensors placed by ``map_location`` as ``torch.load`` places them."""

    fail = _failing(where)
    with _archive(source, where) as (archive, raw, prefix):
        data = _record(archive, f"{prefix}data.pkl", fail)
        big = _byteorder(archive, prefix, fail)
        known: dict[str, Storage] = {}

        def find_global(module: str, name: str) -> Any:
            found = torch_globals.find(module, name)
            if found is None:
                name = torch_globals.full_name(module, name)
                raise UnpicklingError(_refusal(where, name, weights_only))
            return found

        def storage(pid: Any) -> Storage:
            return _storage(pid, known, fail)

        def read(s: Storage) -> np.ndarray:
            return _storage_bytes(archive, raw, prefix, big, s, fail)

        obj = torch_pickle.unpickle(data, find_global, storage, where)
        maker = TensorMaker(read, map_location, where)
        return _fill(obj, maker.tensor, {}, 0, fail)


def unsafe_globals(source: Source, where: str) -> list[str]:
    """The ``module.name`` of each global the torch.save checkpoint ``source`` names that
    :func:`load` refuses, once each in file order (PyTorch's
    ``get_unsafe_globals_in_checkpoint``); nothing is called but allowed constructors."""
    refused: dict[str, None] = {}

    def find_global(module: str, name: str) -> Any:
        found = torch_globals.find(module, name)
        if found is None:
            refused[torch_globals.full_name(module, name)] = None
            return torch_pickle.Opaque()
        return found

    with _archive(source, where) as (archive, _, prefix):
        data = _record(archive, f"{prefix}data.pkl", _failing(where))
    torch_pickle.unpickle(data, find_global, lambda pid: torch_pickle.Opaque(), where, True)
    return list(refused)


def _failing(where: str) -> Callable[[str], NoReturn]:
    """A function raising the error of a damaged file ``where``."""

    def fail(what: str) -> NoReturn:
        raise SafetensorsError(f"tw.load: {where} {what}")

    return fail


@contextlib.contextmanager
def _archive(source: Source, where: str) -> Iterator[tuple[zipfile.ZipFile, IO[bytes], str]]:
    """The zip of the torch.save checkpoint ``source``, the file it reads, and the folder its
    records lie in; the legacy format is refused."""
    fail = _failing(where)
    if kind(source) == "legacy":
        fail(
            "is a torch.save checkpoint in PyTorch's legacy format (before 1.6, or "
            "_use_new_zipfile_serialization=False), a bare pickle that tw.load does not read; "
            "load it with torch.load and torch.save it again in the zip format (the default)"
        )
    with open(source, "rb") if isinstance(source, str) else io.BytesIO(source) as raw:
        try:
            archive = zipfile.ZipFile(raw)
        except _ZIP_ERRORS as e:
            fail(f"is not a readable zip archive (truncated or damaged): {e}")
        yield archive, raw, _prefix(archive, fail)


def _refusal(where: str, name: str, weights_only: Optional[bool]) -> str:
    lifted = (
        "weights_only=False was passed, but it does not lift this"
        if weights_only is False
        else "weights_only=False would not lift this"
    )
    return (
        f"tw.load: {where} is a torch.save checkpoint naming the global {name!r}, which is "
        "not one a weights-only checkpoint holds (tensors, Parameters, storages, dtypes, "
        "torch.Size, torch.device, OrderedDict, sets, complex numbers, bytes). tw.load never "
        f"imports or runs what a file names: {lifted}. To convert the file, where you trust "
        "it: obj = torch.load(path, weights_only=False), then torch.save (or tw.save) only its "
        "tensors and plain containers, e.g. model.state_dict() and optimizer.state_dict()"
    )


def _prefix(archive: zipfile.ZipFile, fail: Callable[[str], NoReturn]) -> str:
    """The folder every record lies in (torch names it after the file)."""
    pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        fail(
            "is a zip archive but not a torch.save checkpoint: it has no <archive>/data.pkl"
            if not pickles
            else "holds several data.pkl records"
        )
    prefix = pickles[0][: -len("data.pkl")]
    if f"{prefix}constants.pkl" in archive.namelist():
        fail(
            "is a TorchScript archive (torch.jit.save), which holds code; tw.load reads "
            "torch.save checkpoints: torch.save the module's state_dict() instead"
        )
    return prefix


def _record(archive: zipfile.ZipFile, name: str, fail: Callable[[str], NoReturn]) -> bytes:
    """The bytes of the record ``name``, checked to be stored as they are."""
    _check_stored(archive.getinfo(name), fail)
    try:
        return archive.read(name)
    except _ZIP_ERRORS as e:
        fail(f"is not a readable zip archive (truncated or damaged): {e}")


def _check_stored(info: zipfile.ZipInfo, fail: Callable[[str], NoReturn]) -> None:
    # torch.save never compresses; a compressed record could unpack to any size
    if info.compress_type != zipfile.ZIP_STORED:
        fail(
            f"has the record {info.filename!r} compressed; torch.save stores records as they "
            "are, and tw.load reads only those (repack the zip without compression: zip -0)"
        )


def _byteorder(archive: zipfile.ZipFile, prefix: str, fail: Callable[[str], NoReturn]) -> bool:
    """Whether the storages' bytes are big-endian (little when the record is absent)."""
    if f"{prefix}byteorder" not in archive.namelist():
        return False
    order = _record(archive, f"{prefix}byteorder", fail)
    if order not in (b"little", b"big"):
        fail(f"has a byteorder record {order[:20]!r}, neither 'little' nor 'big'")
    return order == b"big"


def _storage(pid: Any, known: dict[str, Storage], fail: Callable[[str], NoReturn]) -> Storage:
    """The storage record a persistent id names, one per key."""
    if not (
        isinstance(pid, tuple)
        and len(pid) == 5
        and pid[0] == "storage"
        and isinstance(pid[1], torch_globals.StorageType)
        and all(isinstance(v, str) for v in pid[2:4])
        and type(pid[4]) is int
        and 0 <= pid[4] < 2**62
    ):
        raise UnpicklingError(
            f"tw.load: a persistent id {pid!r:.100} is not ('storage', storage class, key, "
            "location, numel)"
        )
    _, storage_type, key, location, numel = pid
    found = known.setdefault(key, Storage(key, storage_type.dtype, location, numel))
    if (found.dtype, found.location, found.numel) != (storage_type.dtype, location, numel):
        fail(f"describes storage {key!r} in two ways")
    if len(known) > MAX_TENSORS:
        fail(f"holds more than {MAX_TENSORS} storages (tensorweaver.serialization.limits)")
    return found


def _fill(
    obj: Any, tensor: Callable[[Any], Any], done: dict[int, Any], depth: int, fail: Any
) -> Any:
    """``obj`` with each tensor record replaced by its tensor; containers the pickle shared
    stay shared (``done`` maps each container met to its result)."""
    if isinstance(obj, (TensorRecord, ParameterRecord)):
        return tensor(obj)
    if isinstance(obj, Storage):
        fail(f"holds a bare storage ({obj.key!r}); tw.load reads storages only within tensors")
    if type(obj) not in (list, dict, OrderedDict, Counter, tuple, set, frozenset):
        return obj
    if id(obj) in done:
        return done[id(obj)]
    if depth > _MAX_DEPTH:
        fail(f"nests containers more than {_MAX_DEPTH} deep")

    def each(value: Any) -> Any:
        return _fill(value, tensor, done, depth + 1, fail)

    if isinstance(obj, list):
        done[id(obj)] = obj
        obj[:] = [each(v) for v in obj]
    elif isinstance(obj, dict):
        done[id(obj)] = obj
        items = [(each(k), each(v)) for k, v in obj.items()]
        obj.clear()
        for key, value in items:  # (a Counter's update would count the pairs)
            obj[key] = value
        if type(obj) is OrderedDict:  # attributes BUILD set (a state dict's _metadata)
            vars(obj).update({k: each(v) for k, v in vars(obj).items()})
    else:
        done[id(obj)] = type(obj)(each(v) for v in obj)
    return done[id(obj)]


def _storage_bytes(
    archive: zipfile.ZipFile,
    raw: IO[bytes],
    prefix: str,
    big: bool,
    s: Storage,
    fail: Callable[[str], NoReturn],
) -> np.ndarray:
    """The elements of storage ``s`` as a host array, read from its record, checked."""
    name = f"{prefix}data/{s.key}"
    try:
        info = archive.getinfo(name)
    except KeyError:
        fail(f"lacks the record {name!r} of storage {s.key!r} (a damaged file)")
    stored = _storage_dtype(s.dtype, big)
    if info.file_size != s.numel * stored.itemsize:
        fail(
            f"has {info.file_size} bytes for storage {s.key!r}, which should hold {s.numel} "
            f"{s.dtype.name} elements ({s.numel * stored.itemsize} bytes; a damaged file)"
        )
    _check_stored(info, fail)
    start = _data_offset(raw, info, fail)
    if start + info.file_size > raw.seek(0, io.SEEK_END):
        fail(f"is truncated in storage {s.key!r}")
    host = np.empty(s.numel, dtype=stored)  # allocated once the file is known to hold it
    raw.seek(start)
    if raw.readinto(host.view(np.uint8)) != info.file_size:
        fail(f"is truncated in storage {s.key!r}")
    if zlib.crc32(host.view(np.uint8)) != info.CRC:
        fail(f"has damaged bytes in storage {s.key!r} (its CRC-32 does not match)")
    return host if not big else host.astype(host.dtype.newbyteorder("="))


def _storage_dtype(dtype: Any, big: bool) -> np.dtype:
    base = np.dtype("u2" if dtype.name == "bfloat16" else dtype.numpy_name)
    return base.newbyteorder(">" if big else "<")


def _data_offset(raw: IO[bytes], info: zipfile.ZipInfo, fail: Callable[[str], NoReturn]) -> int:
    """Where a stored record's bytes start: after its local header, whose name and extra
    field lengths may differ from the central directory's."""
    raw.seek(info.header_offset)
    header = raw.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        fail(f"has a damaged local header for {info.filename!r}")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_length + extra_length
