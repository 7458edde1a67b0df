"""Safetensors files built for tests without the module under test: PyTorch's bytes and dtypes,
and raw files assembled with ``struct`` and ``json`` from the format's spec."""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from pathlib import Path

import numpy as np
import safetensors.numpy
import tensorweaver as tw
import torch

TORCH_DTYPES = {
    "BOOL": torch.bool,
    "U8": torch.uint8,
    "I8": torch.int8,
    "I16": torch.int16,
    "I32": torch.int32,
    "I64": torch.int64,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F32": torch.float32,
    "F64": torch.float64,
}
TW_DTYPES = {
    "BOOL": tw.bool,
    "U8": tw.uint8,
    "I8": tw.int8,
    "I16": tw.int16,
    "I32": tw.int32,
    "I64": tw.int64,
    "F16": tw.float16,
    "BF16": tw.bfloat16,
    "F32": tw.float32,
    "F64": tw.float64,
}
# Where tw tensors are made from PyTorch references: the backend that has every dtype.
ON = "torch:cpu"


def code_of(t: torch.Tensor) -> str:
    return next(c for c, d in TORCH_DTYPES.items() if d == t.dtype)


def from_torch(t: torch.Tensor) -> object:
    """A tw tensor with ``t``'s dtype and values (bfloat16 travels as its float32 values)."""
    host = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    return tw.tensor(host, dtype=TW_DTYPES[code_of(t)], device=ON)


def torch_bytes(t: torch.Tensor) -> bytes:
    """PyTorch's little-endian bytes of ``t`` (bfloat16 through an int16 view)."""
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    assert sys.byteorder == "little", "these references assume a little-endian host"
    return t.contiguous().numpy().tobytes()


def sample(code: str, shape: tuple[int, ...], seed: int = 0) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    if code == "BOOL":
        return torch.from_numpy(rng.random(shape) < 0.5)
    if code in ("F16", "BF16", "F32", "F64"):
        return torch.from_numpy(rng.standard_normal(shape) * 100).to(TORCH_DTYPES[code])
    info = torch.iinfo(TORCH_DTYPES[code])
    return torch.from_numpy(rng.integers(info.min, info.max, shape, endpoint=True)).to(
        TORCH_DTYPES[code]
    )


def write_raw(path: Path, header: object, data: bytes = b"", *, raw: bytes | None = None) -> Path:
    """A file from the spec: 8-byte little-endian length, the JSON header, the data."""
    head = raw if raw is not None else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + data)
    return path


def assemble(path: Path, tensors: dict[str, torch.Tensor], metadata: dict | None = None) -> Path:
    """A valid file of ``tensors`` in the given order, written without the module under test."""
    header: dict = {"__metadata__": metadata} if metadata is not None else {}
    data = b""
    for name, t in tensors.items():
        b = torch_bytes(t)
        header[name] = {"dtype": code_of(t), "shape": list(t.shape), "data_offsets": [len(data)]}
        header[name]["data_offsets"].append(len(data) + len(b))
        data += b
    return write_raw(path, header, data)


def header_of(path: Path) -> tuple[int, dict]:
    """The header length and the parsed header of the file at ``path``."""
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    return n, json.loads(blob[8 : 8 + n])


def forge(
    structure: object, arrays: dict[str, np.ndarray], version: str = "tensorweaver/3"
) -> bytes:
    """A file anyone could write: ``structure`` over ``arrays`` (NumPy dtypes the library
    names), with valid checksums computed here from the definition in
    tensorweaver/serialization/document.py (they detect damage, not forgery)."""
    codes = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64", np.dtype(np.int64): "I64"}
    table = [[name, codes[arrays[name].dtype], list(arrays[name].shape)] for name in sorted(arrays)]
    compact = json.dumps(["tensorweaver", version, structure, table], separators=(",", ":"))
    data = b"".join(np.ascontiguousarray(arrays[name]).tobytes() for name in sorted(arrays))
    digests = {
        "header": hashlib.sha256(compact.encode("ascii")).hexdigest(),
        "data": hashlib.sha256(data).hexdigest(),
    }
    entry = {"format": version, "sha256": digests, "structure": structure}
    return safetensors.numpy.save(arrays, metadata={"tensorweaver": json.dumps(entry)})
