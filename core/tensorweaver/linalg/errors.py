"""``LinAlgError`` and the checks every linalg function shares: operand shapes and dtypes,
and the ``info`` of a factorization turned into PyTorch's error naming the batch element."""

from __future__ import annotations

from typing import Callable

import numpy as np

from tensorweaver.tensor import Tensor


class LinAlgError(RuntimeError):
    """A linalg function met a singular or non-positive-definite input (``torch.linalg.
    LinAlgError``, a RuntimeError); the ``_ex`` variants return ``info`` instead."""


def check_float(name: str, *tensors: Tensor) -> None:
    for t in tensors:
        if not t.dtype.is_floating_point or t.dtype.itemsize < 4:
            raise RuntimeError(
                f"{name}: Expected a floating point tensor as input. Got {t.dtype.name} "
                "(linalg supports float32 and float64; cast with .double() or .float())"
            )


def check_matrix(name: str, a: Tensor, arg: str = "A") -> None:
    if a.ndim < 2:
        raise RuntimeError(
            f"{name}: The input tensor {arg} must have at least 2 dimensions, got shape "
            f"{list(a.shape)}"
        )
    check_float(name, a)


def check_square(name: str, a: Tensor, arg: str = "A") -> None:
    check_matrix(name, a, arg)
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(
            f"{name}: {arg} must be batches of square matrices, but they are "
            f"{a.shape[-2]} by {a.shape[-1]} matrices"
        )


def raise_for_info(
    name: str,
    info: Tensor,
    message: Callable[[int], str],
    error: type[RuntimeError] = LinAlgError,
) -> None:
    """Raise ``error`` for the first batch element whose ``info`` is nonzero, with
    ``message(info)`` after PyTorch's "(Batch element i): " prefix."""
    codes = np.asarray(info.backend.to_host(info.native))
    if not codes.any():  # the usual case, checked once per call: keep it short
        return
    codes = codes.reshape(-1)
    first = int(np.flatnonzero(codes)[0])
    where = f"(Batch element {first}): " if info.ndim else ""
    raise error(f"{name}: {where}{message(int(codes[first]))}")
