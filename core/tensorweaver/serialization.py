"""``tw.save`` / ``tw.load``: state dicts in the safetensors format, written and read here.

A safetensors file is an 8-byte little-endian header length ``N``, ``N`` bytes of UTF-8
JSON, then the raw little-endian tensor bytes. The header maps each tensor name to
``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the byte buffer,
which the tensors cover exactly, in order, without holes) plus an optional
``"__metadata__"`` object of string → string.

``save`` accepts any nesting of mappings, lists and tuples holding tensors, strings,
numbers, booleans and ``None`` (a model's or an optimizer's ``state_dict``). Tensors go
into the body under path-like names (``"state.0.exp_avg"``; a flat state dict keeps its
own keys, so other tools read them by the usual names); the rest of the structure is
stored as JSON in the metadata entry ``"tensorweaver.structure"``, so ``load`` rebuilds it
exactly: int keys stay ints, tuples stay tuples, and one tensor stored under several paths
comes back as one tensor. A file without that entry (written by another tool) loads as a
flat ``dict`` of name → tensor, in header order.

Loading never executes code: no pickle, no ``eval``. Every header field is checked before
any data is read, and a bad file raises :class:`SafetensorsError` naming the file and the
fault. Data is read with ``numpy.frombuffer`` from a memory map and copied once.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
import uuid
from collections.abc import Mapping
from typing import Any, Callable, NoReturn, Union

import numpy as np

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType

PathLike = Union[str, "os.PathLike[str]"]
Fail = Callable[[str], NoReturn]

STRUCTURE_KEY = "tensorweaver.structure"
_METADATA = "__metadata__"
# The reference implementation refuses larger headers; a corrupt length must not allocate GiB.
_MAX_HEADER = 100_000_000
# Safetensors dtype code ↔ TensorWeaver dtype; BF16 is stored as its raw 16 bits.
_CODES: dict[str, DType] = {
    "BOOL": dtypes.bool_,
    "U8": dtypes.uint8,
    "I8": dtypes.int8,
    "I16": dtypes.int16,
    "I32": dtypes.int32,
    "I64": dtypes.int64,
    "F16": dtypes.float16,
    "BF16": dtypes.bfloat16,
    "F32": dtypes.float32,
    "F64": dtypes.float64,
}
_CODE_OF: dict[str, str] = {d.name: code for code, d in _CODES.items()}
_STORAGE: dict[str, np.dtype] = {
    code: np.dtype("<u2" if code == "BF16" else d.numpy_name).newbyteorder("<")
    for code, d in _CODES.items()
}


class SafetensorsError(ValueError):
    """A file that is not a valid safetensors file; the message names the file and the fault."""


# --- bfloat16 bits -----------------------------------------------------------------------


def bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """The bfloat16 bit patterns (``uint16``) nearest to float32 ``values`` (ties to even).

    NaNs stay NaNs with their sign (quiet bit set); finite values past the bfloat16 range
    round to infinity, as in IEEE rounding.
    """
    bits = np.asarray(values, dtype=np.float32, order="C").view(np.uint32)
    # Adding 0x7FFF plus the lowest kept bit rounds the dropped 16 bits to nearest even.
    rounded = (bits + (np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1)))) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(bits.view(np.float32))
    if nan.any():
        out[nan] = ((bits[nan] >> 16) | np.uint32(0x0040)).astype(np.uint16)
    return out


def float32_from_bfloat16_bits(bits: np.ndarray) -> np.ndarray:
    """The float32 values of bfloat16 bit patterns (exact: bfloat16 is float32's top half)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


# --- structure ↔ JSON ------------------------------------------------------------------

_SCALARS = (str, int, float, bool, type(None))


def _flatten(obj: Any, tensor_type: type) -> tuple[Any, dict[str, Any]]:
    """The JSON form of ``obj`` and the tensors it refers to, by their unique names."""
    tensors: dict[str, Any] = {}
    name_of: dict[int, str] = {}  # id(tensor) → name: a tensor shared by two paths is stored once

    def name_for(path: list[str]) -> str:
        base = ".".join(path) or "tensor"
        name, n = base, 0
        while name in tensors or name == _METADATA:
            n += 1
            name = f"{base}#{n}"
        return name

    def encode(value: Any, path: list[str]) -> Any:
        if isinstance(value, tensor_type):
            name = name_of.get(id(value))
            if name is None:
                name = name_for(path)
                name_of[id(value)] = name
                tensors[name] = value
            return {"tensor": name}
        if isinstance(value, Mapping):
            items = []
            for key, item in value.items():
                if isinstance(key, np.generic):
                    key = key.item()
                if not isinstance(key, _SCALARS):
                    raise TypeError(
                        f"tw.save: mapping key {key!r} at {_where(path)} is a "
                        f"{type(key).__name__}; keys must be str, int, float, bool or None"
                    )
                items.append([key, encode(item, [*path, str(key)])])
            return {"dict": items}
        if isinstance(value, (list, tuple)):
            kind = "tuple" if isinstance(value, tuple) else "list"
            return {kind: [encode(item, [*path, str(i)]) for i, item in enumerate(value)]}
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, _SCALARS):
            return value
        raise TypeError(
            f"tw.save: cannot store a {type(value).__name__} at {_where(path)}; a saved object "
            "holds tensors, mappings, lists, tuples, str, int, float, bool and None"
        )

    return encode(obj, []), tensors


def _where(path: list[str]) -> str:
    return repr(".".join(path)) if path else "the top level"


def _rebuild(node: Any, tensors: Mapping[str, Any], fail: Fail) -> Any:
    """The object whose JSON form is ``node``; ``fail(what)`` raises for a malformed node."""
    if isinstance(node, dict):
        if len(node) != 1:
            fail(f"structure node {node!r} must have exactly one key")
        ((kind, body),) = node.items()
        if kind == "tensor":
            if not isinstance(body, str) or body not in tensors:
                fail(f"structure refers to tensor {body!r}, which the header does not hold")
            return tensors[body]
        if kind in ("list", "tuple") and isinstance(body, list):
            items = [_rebuild(item, tensors, fail) for item in body]
            return tuple(items) if kind == "tuple" else items
        if kind == "dict" and isinstance(body, list):
            out = {}
            for pair in body:
                if not (isinstance(pair, list) and len(pair) == 2):
                    fail(f"dict entry {pair!r} must be a [key, value] pair")
                if not isinstance(pair[0], _SCALARS):
                    fail(f"dict key {pair[0]!r} must be a JSON scalar")
                out[pair[0]] = _rebuild(pair[1], tensors, fail)
            return out
        fail(f"unknown structure node {kind!r}")
    if isinstance(node, list):
        fail("a bare JSON list in the structure (lists are tagged)")
    return node


# --- writing ---------------------------------------------------------------------------


def _host_array(t: Any) -> tuple[str, np.ndarray]:
    """The dtype code and little-endian storage array of tensor ``t`` (one host copy)."""
    code = _CODE_OF[t.dtype.name]
    host = np.asarray(t.detach().numpy())
    if code == "BF16":
        # bfloat16 reaches the host as float32 (exactly representable); store the real bits.
        return code, bfloat16_bits(host)
    return code, np.asarray(host, dtype=_STORAGE[code], order="C")


def _header_bytes(header: dict[str, Any]) -> bytes:
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    # Pad with spaces so the byte buffer starts 8-byte aligned (as the reference writer does).
    return text + b" " * (-len(text) % 8)


def _write_atomic(path: str, chunks: list[Any]) -> None:
    """Write ``chunks`` to ``path`` so readers see the old file or the whole new one, never part.

    The data goes to a fresh file in the same directory (so ``os.replace`` is a rename on one
    file system), is flushed and fsynced, then renamed over ``path``; on any error the fresh
    file is removed and ``path`` is untouched.
    """
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    # os.open with 0o666 lets the umask set the mode, as for a file opened with open(path, "wb").
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable (POSIX)
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def save(obj: Any, f: PathLike) -> None:
    """Save ``obj`` (a state dict: tensors in mappings, lists and tuples) to the file ``f``.

    The file is a standard safetensors file; the write is atomic (see module docs).
    """
    from tensorweaver.tensor import Tensor

    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"tw.save: f must be a path (str or os.PathLike), got {type(f).__name__}")
    structure, tensors = _flatten(obj, Tensor)
    arrays = {name: _host_array(t) for name, t in tensors.items()}
    header: dict[str, Any] = {_METADATA: {STRUCTURE_KEY: json.dumps(structure)}}
    for name, (code, a) in arrays.items():
        header[name] = {"dtype": code, "shape": list(a.shape), "data_offsets": [0, 0]}
    # Widest items first: with an 8-aligned buffer start every tensor starts aligned.
    order = sorted(arrays, key=lambda name: -arrays[name][1].itemsize)
    offset, chunks = 0, []
    for name in order:
        a = arrays[name][1]
        header[name]["data_offsets"] = [offset, offset + a.nbytes]
        offset += a.nbytes
        chunks.append(a.reshape(-1).view(np.uint8).data)
    head = _header_bytes(header)
    _write_atomic(os.fspath(f), [struct.pack("<Q", len(head)), head, *chunks])


# --- reading ---------------------------------------------------------------------------


def _parse_header(raw: bytes, data_len: int, fail: Fail) -> tuple[dict[str, Any], dict[str, str]]:
    """The checked tensor entries (name → (code, shape, begin, end)) and metadata."""
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        fail(f"the header is not valid UTF-8 JSON ({e})")
    if not isinstance(header, dict):
        fail(f"the header is a JSON {type(header).__name__}, not an object")
    metadata = header.pop(_METADATA, None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        fail('"__metadata__" must be an object of string → string')
    entries: dict[str, Any] = {}
    for name, entry in header.items():
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            fail(f"tensor {name!r}: entry must be an object with dtype, shape and data_offsets")
        code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if code not in _CODES:
            fail(
                f"tensor {name!r}: unknown or unsupported dtype {code!r}; TensorWeaver reads "
                f"{', '.join(_CODES)}"
            )
        if not isinstance(shape, list) or not all(_is_count(n) for n in shape):
            fail(f"tensor {name!r}: shape {shape!r} must be a list of non-negative integers")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_count, offsets))):
            fail(f"tensor {name!r}: data_offsets {offsets!r} must be [begin, end] integers")
        begin, end = offsets
        if not begin <= end <= data_len:
            fail(
                f"tensor {name!r}: data_offsets [{begin}, {end}] lie outside the "
                f"{data_len}-byte data buffer (is the file truncated?)"
            )
        expected = math.prod(shape) * _STORAGE[code].itemsize
        if end - begin != expected:
            fail(
                f"tensor {name!r}: data_offsets [{begin}, {end}] span {end - begin} bytes, but "
                f"shape {shape} of {code} needs {expected}"
            )
        entries[name] = (code, tuple(shape), begin, end)
    position = 0
    for name, (_, _, begin, end) in sorted(entries.items(), key=lambda kv: kv[1][2:]):
        if begin != position:
            what = "overlaps the previous tensor" if begin < position else "leaves a gap before it"
            fail(f"tensor {name!r} at data_offsets [{begin}, {end}] {what} (byte {position})")
        position = end
    if position != data_len:
        fail(f"the tensors cover {position} bytes, but the data buffer holds {data_len}")
    return entries, metadata


def _is_count(n: Any) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n >= 0


def _not_safetensors_hint(prefix: bytes) -> str:
    if prefix.startswith(b"PK\x03\x04") or prefix.startswith(b"\x80"):
        return (
            "; it looks like a pickle/zip checkpoint (torch.save's format), which TensorWeaver "
            "never loads because unpickling runs code: save it as safetensors instead"
        )
    return ""


def _read_arrays(path: str) -> tuple[dict[str, tuple[str, np.ndarray]], dict[str, str]]:
    """Every tensor of the file as (dtype code, host array), and the metadata."""

    def fail(what: str) -> NoReturn:
        raise SafetensorsError(f"tw.load: {path!r} is not a valid safetensors file: {what}")

    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        prefix = f.read(8)
        if len(prefix) < 8:
            fail(f"truncated: the file has {size} bytes, fewer than the 8-byte header length")
        (n,) = struct.unpack("<Q", prefix)
        if n > size - 8:
            fail(
                f"the header length {n} runs past the end of the file ({size} bytes; "
                f"truncated, or not safetensors){_not_safetensors_hint(prefix)}"
            )
        if n > _MAX_HEADER:
            fail(f"the header length {n} exceeds the {_MAX_HEADER}-byte limit")
        entries, metadata = _parse_header(f.read(n), size - 8 - n, fail)
        arrays = {}
        if size > 8 + n:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                for name, (code, shape, begin, end) in entries.items():
                    arrays[name] = (code, _copy_out(mm, 8 + n + begin, end - begin, code, shape))
        else:
            for name, (code, shape, _, _) in entries.items():
                arrays[name] = (code, np.empty(shape, dtype=_STORAGE[code]))
    return arrays, metadata


def _copy_out(buffer: Any, start: int, nbytes: int, code: str, shape: tuple) -> np.ndarray:
    storage = _STORAGE[code]
    if nbytes == 0:
        return np.empty(shape, dtype=storage)
    # The view into the map lives only inside this call, so the map can close afterwards.
    view = np.frombuffer(buffer, dtype=storage, count=nbytes // storage.itemsize, offset=start)
    return view.reshape(shape).copy()


def load(f: PathLike, device: Any = None, *, map_location: Any = None) -> Any:
    """Load what :func:`save` stored in ``f``, with its tensors on ``device``.

    ``device`` (or PyTorch's spelling ``map_location``) is any device spec (``"numpy"``,
    ``"torch:cpu"``, ``"cunumeric"``, a ``tw.device``); ``None`` means the current default
    device. A safetensors file written by another tool loads as a flat dict of tensors.
    Raises :class:`SafetensorsError` for a file that is not valid safetensors.
    """
    import tensorweaver as tw

    if device is not None and map_location is not None:
        raise TypeError("tw.load: pass device or map_location, not both")
    device = map_location if device is None else device
    path = os.fspath(f)
    arrays, metadata = _read_arrays(path)

    def fail(what: str) -> NoReturn:
        raise SafetensorsError(f"tw.load: {path!r} has a bad {STRUCTURE_KEY!r} entry: {what}")

    structure = None
    if STRUCTURE_KEY in metadata:
        try:
            structure = json.loads(metadata[STRUCTURE_KEY])
        except (ValueError, RecursionError) as e:
            fail(f"not valid JSON ({e})")
    tensors = {}
    for name, (code, a) in arrays.items():
        host = float32_from_bfloat16_bits(a) if code == "BF16" else a
        try:
            tensors[name] = tw.tensor(host, dtype=_CODES[code], device=device)
        except TypeError as e:  # the device lacks the dtype (bfloat16 on NumPy, say)
            raise TypeError(
                f"tw.load: tensor {name!r} of {path!r} cannot be created: {e}; pass device= "
                "naming a device that has this dtype"
            ) from e
    if structure is None:
        return tensors
    try:
        return _rebuild(structure, tensors, fail)
    except RecursionError:
        fail("nested too deeply")
