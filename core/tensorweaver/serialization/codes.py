"""Safetensors dtype codes, the TensorWeaver dtypes they stand for, and tensor bytes on the host.

A file stores every tensor as little-endian bytes. bfloat16 reaches the host as float32 (the
backend contract's host type for it, since NumPy has no bfloat16) and is stored as its raw 16
bits, so the conversions between the two live here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType

# Safetensors dtype code → TensorWeaver dtype. The library spells a code by the dtype's name
# when writing ("float32" → "F32"), and TensorWeaver's names are those names.
CODES: dict[str, DType] = {
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
CODE_OF: dict[str, str] = {d.name: code for code, d in CODES.items()}
# The little-endian host array type of each code's bytes.
STORAGE: dict[str, np.dtype] = {
    code: np.dtype("<u2" if code == "BF16" else d.numpy_name).newbyteorder("<")
    for code, d in CODES.items()
}


def bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """The bfloat16 bit patterns (``uint16``) nearest to float32 ``values`` (ties to even).

    NaNs stay NaNs with their sign (quiet bit set); finite values past the bfloat16 range
    round to infinity, as in IEEE rounding.
    """
    bits = np.asarray(values, dtype=np.float32, order="C").view(np.uint32)
    # Adding 0x7FFF plus the lowest kept bit rounds the dropped 16 bits to nearest even.
    rounded = (bits + (np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1)))) >> 16
    # np.array, not astype: arithmetic on a 0-d array gives a NumPy scalar, not an array.
    out = np.array(rounded, dtype=np.uint16)
    nan = np.isnan(bits.view(np.float32))
    if nan.any():
        out[nan] = ((bits[nan] >> 16) | np.uint32(0x0040)).astype(np.uint16)
    return out


def float32_from_bfloat16_bits(bits: np.ndarray) -> np.ndarray:
    """The float32 values of bfloat16 bit patterns (exact: bfloat16 is float32's top half)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def stored_array(t: Any) -> tuple[str, np.ndarray]:
    """The dtype code of tensor ``t`` and its bytes as a C-ordered little-endian host array;
    a complex tensor as its (real, imaginary) pairs (safetensors has no complex codes)."""
    # a copy (numpy() would share and mark the memory; __array__ is to refuse a conj view)
    host = t.backend.to_host(t.native)
    if t.dtype.is_complex:
        code = CODE_OF[t.dtype.to_real().name]
        return code, np.asarray(np.stack([host.real, host.imag], -1), STORAGE[code], order="C")
    code = CODE_OF[t.dtype.name]
    if code == "BF16":
        # bfloat16 reaches the host as float32 (exactly representable); store the real bits.
        return code, bfloat16_bits(host)
    return code, np.asarray(host, dtype=STORAGE[code], order="C")


def host_values(code: str, stored: np.ndarray) -> np.ndarray:
    """The host array a tensor of ``code`` is created from, given its stored bytes."""
    return float32_from_bfloat16_bits(stored) if code == "BF16" else stored
