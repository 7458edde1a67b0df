"""Data types and the standard's data type functions: ``astype``, ``can_cast``, ``finfo``,
``iinfo``, ``isdtype``, ``result_type``.

The dtypes are the core's own objects (``xp.float32 is tw.float32``). TensorWeaver has no
uint16/uint32/uint64, so the namespace leaves them out, as the standard allows. Promotion
follows the standard's table: unlike PyTorch's, a 0-d array counts as much as any other
array (only Python scalars are weak).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any, Union

from tensorweaver.contract.dtypes import (
    DType,
    complex64,
    complex128,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from tensorweaver.contract.dtypes import bool_ as bool  # noqa: A001  (the standard's name)
from tensorweaver.promotion import default_complex_dtype, get_default_dtype, promote_types
from tensorweaver.tensor import Tensor

#: The standard's dtypes that TensorWeaver has, by name (``float16`` is there too, outside
#: the standard).
DTYPES: dict[str, DType] = {
    d.name: d
    for d in (bool, int8, int16, int32, int64, uint8, float32, float64, complex64, complex128)
}
_KINDS = {
    "bool": "b",
    "signed integer": "i",
    "unsigned integer": "u",
    "integral": "iu",
    "real floating": "f",
    "complex floating": "c",
    "numeric": "iufc",
}


def isdtype(dtype: DType, kind: Union[DType, str, tuple]) -> bool:
    """Whether ``dtype`` is ``kind``: a dtype, a kind name (``"real floating"``, ...) or a
    tuple of them."""
    if not isinstance(dtype, DType):
        raise TypeError(f"isdtype: expected a dtype such as xp.float32, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, DType):
        return dtype is kind
    if kind not in _KINDS:
        raise ValueError(f"isdtype: unknown kind {kind!r}; use one of {', '.join(_KINDS)}")
    return dtype.kind in _KINDS[kind]


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype the standard's promotion gives arrays, dtypes and Python scalars together."""
    found: DType | None = None
    scalars = []
    for x in arrays_and_dtypes:
        dtype = x if isinstance(x, DType) else getattr(x, "dtype", None)
        if isinstance(dtype, DType):
            found = dtype if found is None else promote_types(found, dtype)
        elif isinstance(x, (int, float, complex)):
            scalars.append(x)
        else:
            raise TypeError(f"result_type: expected arrays, dtypes or Python scalars, got {x!r}")
    if found is None:
        raise ValueError("result_type: needs at least one array or dtype")
    for s in scalars:
        found = _with_scalar(found, s)
    return found


def _with_scalar(dtype: DType, scalar: Any) -> DType:
    """A Python scalar takes the array's dtype within its kind (bool < int < float <
    complex); a complex scalar makes a real floating array the complex dtype of its
    precision (float16 as complex64, the smallest there is)."""
    rank = (
        0
        if isinstance(scalar, builtins.bool)
        else 1
        if isinstance(scalar, int)
        else 2
        if isinstance(scalar, float)
        else 3
    )
    kind_rank = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}[dtype.kind]
    if rank <= kind_rank:
        return dtype
    if rank == 3:
        if dtype.kind == "f":
            return complex128 if dtype is float64 else complex64
        return default_complex_dtype()
    return int64 if rank == 1 else get_default_dtype()


def can_cast(from_: Union[DType, Tensor], to: DType, /) -> bool:
    """Whether promotion may turn ``from_`` (a dtype or array) into ``to``."""
    source = from_.dtype if isinstance(from_, Tensor) else from_
    if not isinstance(source, DType) or not isinstance(to, DType):
        raise TypeError(f"can_cast: expected dtypes or arrays, got {from_!r} and {to!r}")
    if source is to:
        return True
    if (source.kind == "b") != (to.kind == "b"):
        return False
    if (source.kind in "iu") != (to.kind in "iu"):
        return False  # the standard's table joins no integer to a floating dtype
    if source.kind == "c" and to.kind != "c":
        return False
    return promote_types(source, to) is to


def astype(x: Tensor, dtype: DType, /, *, copy: bool = True, device: Any = None) -> Tensor:
    """``x`` as ``dtype`` (and on ``device``); without ``copy`` an unchanged ``x`` is ``x``."""
    out = x if device is None else x.to(device)
    out = out.to(dtype)
    return out.clone() if copy and out is x else out


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name for the type
    """Machine limits of a floating-point dtype, as the standard's ``finfo`` object."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the standard's name for the type
    """Machine limits of an integer dtype, as the standard's ``iinfo`` object."""

    bits: int
    max: int
    min: int
    dtype: DType


def _dtype_of(type: Union[DType, Tensor], name: str) -> DType:  # noqa: A002
    dtype = type.dtype if isinstance(type, Tensor) else type
    if not isinstance(dtype, DType):
        raise TypeError(f"{name}: expected a dtype or an array, got {type!r}")
    return dtype


def finfo(type: Union[DType, Tensor], /) -> finfo_object:  # noqa: A002
    """Machine limits of a floating-point dtype (or an array's dtype); for a complex dtype,
    those of its real and imaginary parts (the standard's ``dtype`` is then the real one)."""
    from tensorweaver.dtype_info import finfo as core_finfo

    dtype = _dtype_of(type, "finfo").to_real()
    info = core_finfo(dtype)
    return finfo_object(info.bits, info.eps, info.max, info.min, info.smallest_normal, dtype)


def iinfo(type: Union[DType, Tensor], /) -> iinfo_object:  # noqa: A002
    """Machine limits of an integer dtype (or an array's dtype)."""
    from tensorweaver.dtype_info import iinfo as core_iinfo

    dtype = _dtype_of(type, "iinfo")
    info = core_iinfo(dtype)
    return iinfo_object(info.bits, info.max, info.min, dtype)
