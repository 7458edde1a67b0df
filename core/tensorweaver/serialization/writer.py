"""``tw.save``: a state dict or module to a safetensors file, written by the safetensors library."""

from __future__ import annotations

import os
import struct
from typing import IO, Any, Union

import numpy as np
import safetensors

from tensorweaver.serialization import document, streams
from tensorweaver.serialization.atomic import write_atomic
from tensorweaver.serialization.codes import CODES, stored_array
from tensorweaver.serialization.limits import MAX_HEADER_BYTES, MAX_TENSORS
from tensorweaver.serialization.structure import flatten

FileLike = Union[str, "os.PathLike[str]", IO[bytes]]


def save(
    obj: Any,
    f: FileLike,
    pickle_module: Any = None,
    pickle_protocol: int = 2,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
) -> None:
    """Save ``obj`` to ``f``, a path or a binary file object (anything with ``write``).

    PyTorch's other arguments are accepted so its scripts run unchanged, and change nothing:
    they configure pickling and the zip container, and this file has neither.

    ``obj`` is a state dict (tensors in mappings, lists and tuples), a whole ``tw.nn.Module``
    (:mod:`.module_state`: its tensors, attributes and submodules; not its hooks), or any
    nesting of those. The file is a standard safetensors file with the structure and checksums
    in its metadata. A path is replaced atomically (readers see the old file or the new one,
    never part); a file object gets the whole file in one write once it is complete. Raises
    ``TypeError`` naming the path of a value it cannot store (a lambda, an arbitrary object),
    ``ValueError`` for more tensors or a larger header than :func:`load` accepts.
    """
    if streams.is_path(f):
        path = os.fspath(f)
        where = repr(path)
    else:
        streams.check_writer(f)
        where = streams.label(f)
    flat = flatten(obj)
    if len(flat.tensors) > MAX_TENSORS:
        raise ValueError(
            f"tw.save: {where} would hold {len(flat.tensors)} tensors, more than the "
            f"{MAX_TENSORS} tw.load accepts in one file; save the state in several files"
        )
    arrays, table = {}, {}
    for name, t in flat.tensors.items():
        code, arrays[name] = stored_array(t)
        table[name] = (code, list(arrays[name].shape))
    metadata = document.make(flat.structure, table, arrays, version=flat.version)
    # ``arrays`` stays alive while the library reads their memory.
    entries = {name: _entry(CODES[code].name, arrays[name]) for name, (code, _) in table.items()}

    if not streams.is_path(f):
        blob = safetensors.serialize(entries, metadata=metadata)
        _check_header(blob[:8], where)
        streams.write_all(f, blob)
        return

    def write(tmp: str) -> None:
        safetensors.serialize_file(entries, tmp, metadata=metadata)
        with open(tmp, "rb") as written:
            _check_header(written.read(8), where)

    write_atomic(path, write)


def _check_header(prefix: bytes, where: str) -> None:
    """Raise unless the file starting with ``prefix`` has a header ``tw.load`` accepts."""
    (n,) = struct.unpack("<Q", prefix)
    if n > MAX_HEADER_BYTES:
        raise ValueError(
            f"tw.save: {where} would have a {n}-byte header, more than the "
            f"{MAX_HEADER_BYTES} tw.load accepts; store less non-tensor data, or fewer "
            "tensors per file"
        )


def _entry(dtype: str, a: np.ndarray) -> Any:
    """The library's description of one tensor of dtype name ``dtype`` and bytes ``a``."""
    if hasattr(safetensors, "TensorSpec"):  # safetensors >= 0.8 reads the array's memory
        return safetensors.TensorSpec(
            dtype=dtype, shape=list(a.shape), data_ptr=a.ctypes.data, data_len=a.nbytes
        )
    return {"dtype": dtype, "shape": list(a.shape), "data": a.tobytes()}
