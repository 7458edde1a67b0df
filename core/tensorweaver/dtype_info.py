"""``tw.finfo`` and ``tw.iinfo``: the numeric limits of a dtype, with PyTorch's fields.

Float limits are computed from each format's bit layout (bfloat16 included, which NumPy
lacks), so every field is an exact Python float as in PyTorch.
"""

from __future__ import annotations

import math

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.promotion import get_default_dtype

#: (stored mantissa bits, exponent bits) of each IEEE-style float format.
_FLOAT_LAYOUT = {
    dtypes.float16: (10, 5),
    dtypes.bfloat16: (7, 8),
    dtypes.float32: (23, 8),
    dtypes.float64: (52, 11),
}


class finfo:  # noqa: N801  (PyTorch's name)
    """Limits of a floating-point dtype (the default dtype when none is given)."""

    def __init__(self, type: DType | None = None) -> None:  # noqa: A002  (PyTorch's keyword)
        dtype = get_default_dtype() if type is None else _dtype("finfo", type)
        dtype = dtype.to_real()  # a complex dtype's limits are its parts'
        if not dtype.is_floating_point:
            raise TypeError(
                f"tw.finfo() requires a floating point dtype, got {dtype!r}; "
                "use tw.iinfo for integer dtypes"
            )
        mantissa, exponent = _FLOAT_LAYOUT[dtype]
        max_exponent = 2 ** (exponent - 1) - 1
        self.bits: int = dtype.itemsize * 8
        self.eps: float = 2.0**-mantissa
        self.max: float = (2.0 - self.eps) * 2.0**max_exponent
        self.min: float = -self.max
        self.smallest_normal: float = 2.0 ** (1 - max_exponent)
        self.tiny: float = self.smallest_normal
        # the power of ten that every value of this dtype resolves, as NumPy defines it
        self.resolution: float = 10.0 ** -math.floor(-math.log10(self.eps))
        self.dtype: str = dtype.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
            f"tiny={self.tiny:g}, dtype={self.dtype})"
        )


class iinfo:  # noqa: N801  (PyTorch's name)
    """Limits of an integer dtype."""

    def __init__(self, type: DType) -> None:  # noqa: A002  (PyTorch's keyword)
        dtype = _dtype("iinfo", type)
        if dtype.kind not in "iu":
            hint = "use tw.finfo for it" if dtype.kind == "f" else "bool has no integer limits"
            raise TypeError(f"tw.iinfo() requires an integer dtype, got {dtype!r}; {hint}")
        self.bits: int = dtype.itemsize * 8
        signed = dtype.kind == "i"
        self.min: int = -(2 ** (self.bits - 1)) if signed else 0
        self.max: int = 2 ** (self.bits - 1) - 1 if signed else 2**self.bits - 1
        self.dtype: str = dtype.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def _dtype(op: str, value: object) -> DType:
    if not isinstance(value, DType):
        raise TypeError(
            f"tw.{op}(): expected a tensorweaver dtype such as tw.float32, got "
            f"{type(value).__name__} {value!r}"
        )
    return value
