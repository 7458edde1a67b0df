"""The dtypes PyTorch's floating-point kernels (losses, pools, im2col) refuse."""

from __future__ import annotations

from tensorweaver.contract.dtypes import DType


def is_integral(dtype: DType) -> bool:
    """Whether ``dtype`` holds integers or bools (neither floating point nor complex)."""
    return not (dtype.is_floating_point or dtype.is_complex)
