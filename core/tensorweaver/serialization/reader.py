"""``tw.load``: a safetensors file back to the object ``tw.save`` stored, checked before use.

The safetensors library parses and validates the header (JSON, dtypes, shapes, and offsets
that tile the data exactly). Then come TensorWeaver's own checks: the bounds of
:mod:`.limits`, the dtypes it has, the header's checksum (:mod:`.document`). Then the
tensors' bytes are read, in file order, straight into host arrays (one copy; bfloat16 as raw
bits, which the library's NumPy reader cannot express) and checked against the data's
checksum before any tensor is made. A file object's bytes, read whole, pass the same checks:
the library validates them in memory (``safetensors.deserialize``, which copies each tensor's
bytes once). Nothing in a file is ever executed (no pickle), and a class it names is only
looked up in the allow-list (:mod:`.allowlist`). A ``torch.save`` zip checkpoint goes to
:mod:`.torch_checkpoint`, which reads its pickle without running it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import struct
import sys
from collections.abc import Iterator, Mapping
from typing import IO, Any, BinaryIO, Callable, NoReturn, Optional, Union

import numpy as np
import safetensors

from tensorweaver.selection import NoCudaError
from tensorweaver.serialization import allowlist, document, streams, torch_checkpoint
from tensorweaver.serialization.codes import CODES, STORAGE, host_values
from tensorweaver.serialization.errors import SafetensorsError
from tensorweaver.serialization.limits import MAX_HEADER_BYTES, MAX_RANK, MAX_TENSORS
from tensorweaver.serialization.structure import named_globals, rebuild

FileLike = Union[str, "os.PathLike[str]", IO[bytes]]
Fail = Callable[[str], NoReturn]
# Each tensor's (dtype code, stored bytes as a host array), in file order.
Stored = dict[str, tuple[str, np.ndarray]]
Table = dict[str, tuple[str, list[int]]]


# The keywords of pickle.Unpickler, which torch.load passes on; they mean nothing here.
_UNPICKLER_ARGS = frozenset({"encoding", "errors", "fix_imports", "buffers"})


def load(
    f: FileLike,
    map_location: Any = None,
    pickle_module: Any = None,
    *,
    weights_only: Optional[bool] = None,
    mmap: Optional[bool] = None,
    device: Any = None,
    **pickle_load_args: Any,
) -> Any:
    """Load what :func:`save` stored in ``f`` (a path, or a binary file object with ``read``,
    read from its position to its end), with its tensors on ``map_location``.

    ``map_location`` (or ``device``) is any device spec (``"numpy"``, ``"torch:cpu"``,
    ``"cunumeric"``, a ``tw.device``); ``None`` means the current default device. PyTorch's
    remapping forms work too, with each tensor's location being where it loads by default
    (``"cpu"``, or ``"cuda:0"`` when that is the default device): a function
    ``(tensor, location) -> tensor`` (None keeps the tensor; ``lambda storage, loc: storage``
    is the identity), or a dict from location to device (``{"cuda:0": "cpu"}``). A
    safetensors file written by another tool loads as a flat dict of tensors, in file order.
    A saved module is rebuilt only from allowed classes (:mod:`.allowlist`), without running
    any of its code.

    A checkpoint written by ``torch.save`` (its zip format, the default since PyTorch 1.6)
    loads too, as ``torch.load(f, weights_only=True)`` loads it but without pickle
    (:mod:`.torch_checkpoint`): tensors of every dtype TensorWeaver has, 0-d and empty ones,
    with their strides, those sharing a storage as views sharing memory, Parameters
    (tied ones stay one object), ``OrderedDict`` state dicts with their ``_metadata``,
    optimizer state, numbers, strings, bytes, sets, dtypes, ``torch.Size`` and
    ``torch.device``. Its tensors go where they were saved (``"cpu"``: the default device;
    ``"cuda:0"``: CUDA, as in PyTorch) unless ``map_location`` says otherwise; a
    ``map_location`` function gets each storage as a 1-d tensor on the CPU and its saved
    location. Any other global the file names (a class, ``os.system``) raises
    ``pickle.UnpicklingError`` naming it, whatever ``weights_only`` says; PyTorch's legacy
    format (before 1.6) and TorchScript archives are refused.

    ``weights_only`` is accepted for PyTorch's sake: every ``tw.load`` is what PyTorch's
    ``weights_only=True`` aims at, since nothing in a file is ever executed, imported or
    unpickled, and ``weights_only=False`` changes nothing (it does not lift the allow-list).
    ``pickle_module`` and ``pickle_load_args`` (``encoding``, ...) are accepted for the same
    reason and unused; as in PyTorch, ``pickle_module`` with ``weights_only=True`` is an error.
    ``mmap`` is accepted too, but tensors are always read into memory (each backend holds its
    own copy, and a mapped file truncated by another writer would crash the process); as in
    PyTorch, ``mmap=True`` needs a path.

    Raises :class:`SafetensorsError` for a file that is not valid safetensors, exceeds
    TensorWeaver's bounds, or does not match the checksum it was saved with (for a torch.save
    file: a damaged zip, a missing or wrongly sized storage, bytes failing their CRC-32);
    ``pickle.UnpicklingError`` for a class or function the allow-list lacks, or a malformed
    pickle in a torch.save file.
    """
    import tensorweaver as tw

    unknown = sorted(set(pickle_load_args) - _UNPICKLER_ARGS)
    if unknown:
        raise TypeError(f"tw.load() got an unexpected keyword argument {unknown[0]!r}")
    if weights_only and pickle_module is not None:
        raise RuntimeError(
            "tw.load: can not safely load weights when explicit pickle_module is specified; "
            "drop pickle_module (tw.load never unpickles)"
        )
    if device is not None and map_location is not None:
        raise TypeError("tw.load: pass device or map_location, not both")
    device = map_location if device is None else device
    if mmap and not streams.is_path(f):
        raise ValueError("tw.load: f must be a file path in order to use the mmap argument")
    source = _source(f)
    if torch_checkpoint.kind(source) is not None:
        with _deserializing():
            return torch_checkpoint.load(source, _where(f), device, weights_only)
    remap = None
    if isinstance(device, Mapping) or (callable(device) and not isinstance(device, tw.Device)):
        remap, device = _remapping(device), None
    where, stored, found = _read(f, source)

    def tensor(name: str) -> Any:
        code, data = stored[name]
        try:
            with _deserializing():
                out = tw.tensor(host_values(code, data), dtype=CODES[code], device=device)
            return out if remap is None else remap(out)
        except TypeError as e:  # the device lacks the dtype (bfloat16 on NumPy, say)
            raise TypeError(
                f"tw.load: tensor {name!r} of {where} cannot be created: {e}; pass device= "
                "naming a device that has this dtype"
            ) from e

    if found is None:
        return {name: tensor(name) for name in stored}

    def fail(what: str) -> NoReturn:
        raise SafetensorsError(f"tw.load: {where} has a bad structure in its metadata: {what}")

    return rebuild(found.structure, stored, tensor, fail)


def _remapping(map_location: Any) -> Any:
    """PyTorch's ``map_location`` dict or function as a function of a loaded tensor."""
    import tensorweaver as tw

    def location(t: Any) -> str:
        kind = t.device.type
        return kind if kind == "cpu" else f"{kind}:{t.device.index or 0}"

    if isinstance(map_location, Mapping):

        def mapped(t: Any) -> Any:
            if location(t) not in map_location:
                return t
            with _deserializing():
                return t.to(map_location[location(t)])

        return mapped

    def call(t: Any) -> Any:
        out = map_location(t, location(t))
        if out is None:
            return t
        if not isinstance(out, tw.Tensor):
            raise TypeError(
                f"tw.load: map_location function returned {type(out).__name__}; it must "
                "return the tensor it was given (moved if you like) or None"
            )
        return out

    return call


@contextlib.contextmanager
def _deserializing() -> Iterator[None]:
    """PyTorch's RuntimeError for a tensor loaded onto CUDA where there is none (moving one
    there raises ``AssertionError``, as PyTorch's lazy CUDA start does)."""
    try:
        yield
    except NoCudaError as e:
        raise RuntimeError(
            f"tw.load: attempting to deserialize a tensor on a CUDA device, but there is none "
            f"({e}); on a CPU-only machine pass map_location='cpu'"
        ) from e


def get_unsafe_globals_in_checkpoint(f: FileLike) -> list[str]:
    """The ``"module:qualname"`` names of the classes and functions in the checkpoint ``f``
    that ``tw.load`` would refuse (not allowed: :mod:`.allowlist`), each once; for a
    ``torch.save`` checkpoint, as PyTorch's, the ``"module.name"`` of each global outside
    what a weights-only checkpoint holds."""
    source = _source(f)
    if torch_checkpoint.kind(source) is not None:
        return torch_checkpoint.unsafe_globals(source, _where(f))
    _, _, found = _read(f, source)
    if found is None:
        return []
    return [name for name in named_globals(found.structure) if not allowlist.allowed(name)]


def _source(f: FileLike) -> Union[str, bytes]:
    """The path ``f`` names, or the bytes of the file object ``f`` from its position on."""
    return os.fsdecode(f) if streams.is_path(f) else streams.read_all(f)


def _where(f: FileLike) -> str:
    """How errors name ``f``."""
    return repr(os.fsdecode(f)) if streams.is_path(f) else streams.label(f)


def _read(
    f: FileLike, source: Union[str, bytes]
) -> tuple[str, Stored, Optional[document.Document]]:
    """How errors name ``f``, the tensors of its ``source`` (:func:`_source`) and
    TensorWeaver's metadata entry, all checked."""
    where = _where(f)
    if isinstance(source, str):
        return where, *_read_path(source)
    return where, *_read_bytes(source, where)


def _read_path(path: str) -> tuple[Stored, Optional[document.Document]]:
    """Every tensor of the file at ``path`` and TensorWeaver's metadata entry, all checked."""
    where = repr(path)

    def fail(what: str) -> NoReturn:
        raise _error(where, what)

    with open(path, "rb") as f:
        before = os.fstat(f.fileno())
        start = 8 + _header_length(f.read(8), before.st_size, fail)
        # The library opens the file by its name: it must have parsed the file ``f`` is.
        metadata, table = _parse(path, fail)
        if _version(before) != _version(os.stat(path)):
            fail("changed while it was being read (a concurrent save?); load it again")
        found = document.find(metadata, table, fail)
        f.seek(start)
        arrays = {name: _read_array(f, code, shape, fail) for name, (code, shape) in table.items()}
    return _verified(arrays, table, found, fail), found


def _read_bytes(blob: bytes, where: str) -> tuple[Stored, Optional[document.Document]]:
    """Every tensor of the file held in ``blob`` and TensorWeaver's metadata entry, checked as
    a file's are."""

    def fail(what: str) -> NoReturn:
        raise _error(where, what)

    n = _header_length(blob[:8], len(blob), fail)
    try:
        items = dict(safetensors.deserialize(blob))
    except safetensors.SafetensorError as e:
        raise _error(where, f"is not a valid safetensors file: {e}") from e
    # The library accepted the header: valid JSON, without repeated names.
    header = json.loads(blob[8 : 8 + n])
    metadata = header.pop("__metadata__", None) or {}
    names = sorted(header, key=lambda name: header[name]["data_offsets"])  # file order
    table = _checked_table([(n, items[n]["dtype"], items[n]["shape"]) for n in names], fail)
    found = document.find(metadata, table, fail)
    arrays = {
        name: np.frombuffer(items[name]["data"], dtype=STORAGE[code]).reshape(shape)
        for name, (code, shape) in table.items()
    }
    return _verified(arrays, table, found, fail), found


def _verified(
    arrays: dict[str, np.ndarray], table: Table, found: Optional[document.Document], fail: Fail
) -> Stored:
    if found is not None and found.data_sha256 is not None:
        document.verify_data(found.data_sha256, arrays, fail)
    return {name: (table[name][0], a) for name, a in arrays.items()}


def _error(where: str, what: str) -> SafetensorsError:
    return SafetensorsError(f"tw.load: {where} {what}")


def _version(st: os.stat_result) -> tuple[int, ...]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _header_length(prefix: bytes, size: int, fail: Fail) -> int:
    """The header length of a file of ``size`` bytes starting with ``prefix``, within bounds."""
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
    if prefix.startswith(b"\x80"):
        return (
            "; it looks like a bare pickle, which TensorWeaver never loads because unpickling "
            "runs code: save it with torch.save's zip format or tw.save"
        )
    return ""


def _parse(path: str, fail: Fail) -> tuple[dict[str, str], Table]:
    """The metadata and each tensor's (dtype code, shape) in file order, checked."""
    try:
        lib = safetensors.safe_open(path, framework="numpy")
    except safetensors.SafetensorError as e:
        raise _error(repr(path), f"is not a valid safetensors file: {e}") from e
    with lib:
        metadata = lib.metadata() or {}
        names = lib.offset_keys()
        _check_count(len(names), fail)
        entries = [(name, lib.get_slice(name)) for name in names]
        return metadata, _checked_table(
            [(name, e.get_dtype(), e.get_shape()) for name, e in entries], fail
        )


def _check_count(count: int, fail: Fail) -> None:
    if count > MAX_TENSORS:
        fail(
            f"cannot be loaded: it holds {count} tensors, more than the {MAX_TENSORS} "
            "TensorWeaver reads in one file (tensorweaver.serialization.limits)"
        )


def _checked_table(entries: list[tuple[str, str, list[int]]], fail: Fail) -> Table:
    """Each tensor's (dtype code, shape) by name, each checked (:func:`_check_entry`)."""
    _check_count(len(entries), fail)
    for name, code, shape in entries:
        _check_entry(name, code, shape, fail)
    return {name: (code, shape) for name, code, shape in entries}


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
