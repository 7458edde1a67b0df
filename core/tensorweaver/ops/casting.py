"""``tw.can_cast``: whether PyTorch's type promotion lets a value of one dtype be written
into another (no lowering of category: bool < integer < floating < complex); and how PyTorch
rounds double precision into half precision (twice, through float32)."""

from __future__ import annotations

import numpy as np

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.promotion import category


def can_cast(from_: DType, to: DType) -> bool:
    for name, value in (("from_", from_), ("to", to)):
        if not isinstance(value, DType):
            raise TypeError(
                f"can_cast(): argument '{name}' must be a tw.dtype, not {type(value).__name__}"
            )
    return category(from_) <= category(to)


#: The wider dtype PyTorch's conversion passes through on the way from a double-precision
#: dtype to a half-precision one: its CPU kernels (and its reading of Python floats) make a
#: float32 first, so a value near a half-way point of float16 or bfloat16 is rounded twice,
#: where NumPy's direct conversion rounds once.
_THROUGH = {
    (wide, half): narrow
    for wide, narrow in ((dtypes.float64, dtypes.float32), (dtypes.complex128, dtypes.complex64))
    for half in (dtypes.float16, dtypes.bfloat16)
}


def rounded_through(from_: DType, to: DType) -> DType | None:
    """The dtype to convert to first on the way from ``from_`` to ``to`` (None: none)."""
    return _THROUGH.get((from_, to))


def host_for_half(host: np.ndarray, to: DType) -> np.ndarray:
    """``host`` (values on their way to a tensor of ``to``) narrowed as PyTorch narrows them."""
    through = _THROUGH.get((_FROM_NUMPY.get(host.dtype), to))
    return host if through is None else host.astype(through.numpy_name)


_FROM_NUMPY = {np.dtype(np.float64): dtypes.float64, np.dtype(np.complex128): dtypes.complex128}


def number_for_half(value: object, to: DType) -> object:
    """A Python float on its way into a tensor of ``to`` as PyTorch reads it: a half-precision
    fill (``full``, ``fill_``...) converts the double to float32 first, then to ``to``."""
    if type(value) is float and to in _HALF:
        return float(np.float32(value))
    return value


_HALF = frozenset((dtypes.float16, dtypes.bfloat16))
