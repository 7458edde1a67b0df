"""``tw.can_cast``: whether PyTorch's type promotion lets a value of one dtype be written
into another (no lowering of category: bool < integer < floating < complex)."""

from __future__ import annotations

from tensorweaver.contract.dtypes import DType
from tensorweaver.promotion import category


def can_cast(from_: DType, to: DType) -> bool:
    for name, value in (("from_", from_), ("to", to)):
        if not isinstance(value, DType):
            raise TypeError(
                f"can_cast(): argument '{name}' must be a tw.dtype, not {type(value).__name__}"
            )
    return category(from_) <= category(to)
