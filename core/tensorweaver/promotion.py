"""PyTorch's type promotion: which dtype an operation on mixed operands computes in.

Operands fall in three groups, from strongest to weakest: tensors with dimensions, 0-d
tensors, and Python scalars. A weaker group changes the result only when it is of a higher
category (bool < integer < float < complex): ``float32_tensor * 2.5`` stays float32,
``int_tensor * 2.5`` becomes the default float dtype, ``uint8_tensor + 1000`` stays uint8.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType

# Process-wide, as PyTorch's: a thread started after set_default_dtype sees the new default.
_default_float: DType = dtypes.float32


def get_default_dtype() -> DType:
    """The dtype of Python floats and of new float tensors (float32 unless changed)."""
    return _default_float


def set_default_dtype(dtype: DType) -> None:
    """Make ``dtype`` (``tw.float32`` or ``tw.float64``, or float16/bfloat16) the default."""
    if not isinstance(dtype, DType) or not dtype.is_floating_point:
        raise TypeError(f"set_default_dtype: expected a floating-point dtype, got {dtype!r}")
    global _default_float
    _default_float = dtype


_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def category(dtype: DType) -> int:
    return _CATEGORY[dtype.kind]


def default_complex_dtype() -> DType:
    """The dtype of Python complex numbers: complex128 when the default float is float64,
    else complex64 (PyTorch's complex32 for a float16 default is not a tensorweaver dtype)."""
    return dtypes.complex128 if _default_float is dtypes.float64 else dtypes.complex64


@cache
def promote_types(type1: DType, type2: DType) -> DType:
    """The smallest dtype both ``type1`` and ``type2`` convert to safely (PyTorch's
    ``promote_types``)."""
    if type1 is type2:
        return type1
    if type1.kind == "b":
        return type2
    if type2.kind == "b":
        return type1
    if type1.kind == "c" or type2.kind == "c":
        # The complex type whose parts hold both: complex64 with float64 is complex128.
        parts = promote_types(type1.to_real(), type2.to_real())
        return dtypes.complex128 if parts is dtypes.float64 else dtypes.complex64
    if type1.kind == "f" or type2.kind == "f":
        if type1.kind != "f":
            return type2
        if type2.kind != "f":
            return type1
        if {type1, type2} == {dtypes.float16, dtypes.bfloat16}:
            return dtypes.float32
        return type1 if type1.itemsize > type2.itemsize else type2
    if type1.kind == type2.kind:  # both signed (uint8 is the only unsigned type)
        return type1 if type1.itemsize > type2.itemsize else type2
    signed, unsigned = (type1, type2) if type1.kind == "i" else (type2, type1)
    if signed.itemsize > unsigned.itemsize:
        return signed
    return dtypes.int16  # uint8 with int8


def scalar_dtype(value: object) -> DType:
    """The dtype a Python scalar stands for (bool, int64, or the default float)."""
    if isinstance(value, bool):
        return dtypes.bool_
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            raise OverflowError(
                f"int too big to convert: the Python integer {value} fits neither int64 nor "
                "uint64; write it as a float (e.g. float(n)) to use it as a number"
            )
        return dtypes.int64
    if isinstance(value, float):
        return _default_float
    if isinstance(value, complex):
        return default_complex_dtype()
    if isinstance(value, np.generic):
        return scalar_dtype(numpy_scalar_number(value))
    raise TypeError(
        f"expected a Tensor or a Python number, got {type(value).__name__}; "
        "wrap arrays with tw.tensor(...)"
    )


def numpy_scalar_number(value: np.generic) -> int | float | complex:
    """The Python number PyTorch reads a NumPy scalar as: an int where it is an integer (it
    has ``__index__``), a complex where it is a Python complex (``complex128``), else
    ``float(value)``: a ``bool_`` is 1.0 or 0.0, and a ``complex64`` loses its imaginary part
    (with NumPy's ComplexWarning). A string or bytes scalar (``np.str_``) is no number: a
    TypeError, as PyTorch's."""
    if isinstance(value, np.integer):
        return int(value)
    if not isinstance(value, (np.number, np.bool_)):
        raise TypeError(
            f"expected a Tensor or a number, got the NumPy scalar {value!r} of type "
            f"{type(value).__name__}; convert it to a number first (e.g. float(value))"
        )
    return complex(value) if isinstance(value, complex) else float(value)


def _combine(stronger: DType | None, weaker: DType | None) -> DType | None:
    if stronger is None:
        return weaker
    if weaker is None or category(stronger) >= category(weaker):
        return stronger
    if weaker.kind == "c" and stronger.kind == "f":
        # PyTorch keeps the stronger operand's precision (float32 with a complex128 scalar is
        # complex64); its half-precision complex32 is no tensorweaver dtype.
        return dtypes.complex128 if stronger is dtypes.float64 else dtypes.complex64
    return promote_types(stronger, weaker)


def result_type(*operands: object) -> DType:
    """The dtype an elementwise op on ``operands`` (tensors and Python scalars) computes in."""
    groups: list[DType | None] = [None, None, None]  # dimensioned, 0-d, scalar
    for x in operands:
        dtype = getattr(x, "dtype", None)
        if isinstance(dtype, DType):
            slot = 0 if x.shape else 1
        else:
            dtype, slot = scalar_dtype(x), 2
        current = groups[slot]
        groups[slot] = dtype if current is None else promote_types(current, dtype)
    result = _combine(groups[0], _combine(groups[1], groups[2]))
    if result is None:
        raise TypeError("result_type: needs at least one operand")
    if result is dtypes.int64 and _uint64_beside_bool(operands):
        raise RuntimeError(
            "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
            "Bool and UInt64: a Python int in [2**63, 2**64) is a uint64; convert the bool "
            "tensor with .long() or write the number as a float"
        )
    return result


def result_type_of_two(
    *operands: object,
    tensor: object = None,
    other: object = None,
    scalar: object = None,
    scalar1: object = None,
    scalar2: object = None,
) -> DType:
    """``tw.result_type``: :func:`result_type` of two operands, given by position or by the
    names of PyTorch's overloads, ``(tensor, other)``, ``(scalar, tensor)`` and ``(scalar1,
    scalar2)``."""
    named = [v for v in (tensor, other, scalar, scalar1, scalar2) if v is not None]
    if len(operands) + len(named) != 2:
        raise TypeError(
            f"result_type() takes two operands, (tensor, other), (scalar, tensor) or "
            f"(scalar1, scalar2); got {len(operands) + len(named)}"
        )
    return result_type(*operands, *named)


def _uint64_beside_bool(operands: tuple) -> bool:
    """Whether a Python int in [2**63, 2**64) (a uint64 to PyTorch) meets only bools."""
    big = False
    for x in operands:
        dtype = getattr(x, "dtype", None)
        if isinstance(dtype, DType):
            if dtype.kind != "b":
                return False
        elif type(x) is int and x >= 2**63:
            big = True
        elif not isinstance(x, bool):
            return False
    return big
