"""``tw.save``: a state dict to a safetensors file, written by the safetensors library."""

from __future__ import annotations

import os
import struct
from typing import Any, Union

import numpy as np
import safetensors

from tensorweaver.serialization import document
from tensorweaver.serialization.atomic import write_atomic
from tensorweaver.serialization.codes import CODES, stored_array
from tensorweaver.serialization.limits import MAX_HEADER_BYTES, MAX_TENSORS
from tensorweaver.serialization.structure import flatten

PathLike = Union[str, "os.PathLike[str]"]


def save(obj: Any, f: PathLike) -> None:
    """Save ``obj`` (a state dict: tensors in mappings, lists and tuples) to the file ``f``.

    The file is a standard safetensors file with the structure and checksums in its metadata;
    it replaces ``f`` atomically (readers see the old file or the new one, never part).
    Raises ``ValueError`` for more tensors or a larger header than :func:`load` accepts.
    """
    from tensorweaver.tensor import Tensor

    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"tw.save: f must be a path (str or os.PathLike), got {type(f).__name__}")
    path = os.fspath(f)
    structure, tensors = flatten(obj, Tensor)
    if len(tensors) > MAX_TENSORS:
        raise ValueError(
            f"tw.save: {path!r} would hold {len(tensors)} tensors, more than the {MAX_TENSORS} "
            "tw.load accepts in one file; save the state in several files"
        )
    arrays, table = {}, {}
    for name, t in tensors.items():
        code, arrays[name] = stored_array(t)
        table[name] = (code, list(arrays[name].shape))
    metadata = document.make(structure, table, arrays)
    # ``arrays`` stays alive while the library reads their memory.
    entries = {name: _entry(CODES[code].name, arrays[name]) for name, (code, _) in table.items()}

    def write(tmp: str) -> None:
        safetensors.serialize_file(entries, tmp, metadata=metadata)
        with open(tmp, "rb") as written:
            (n,) = struct.unpack("<Q", written.read(8))
        if n > MAX_HEADER_BYTES:
            raise ValueError(
                f"tw.save: {path!r} would have a {n}-byte header, more than the "
                f"{MAX_HEADER_BYTES} tw.load accepts; store less non-tensor data, or fewer "
                "tensors per file"
            )

    write_atomic(path, write)


def _entry(dtype: str, a: np.ndarray) -> Any:
    """The library's description of one tensor of dtype name ``dtype`` and bytes ``a``."""
    if hasattr(safetensors, "TensorSpec"):  # safetensors >= 0.8 reads the array's memory
        return safetensors.TensorSpec(
            dtype=dtype, shape=list(a.shape), data_ptr=a.ctypes.data, data_len=a.nbytes
        )
    return {"dtype": dtype, "shape": list(a.shape), "data": a.tobytes()}
