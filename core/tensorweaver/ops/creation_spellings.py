"""PyTorch's less common creation functions: ``tw.empty_strided``, ``tw.scalar_tensor`` and
``tw.fill`` (out of place: a tensor like ``input`` holding ``value``)."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Number
from typing import Any

from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import creation as cr
from tensorweaver.ops.memory_facts import check_strides
from tensorweaver.tensor import Tensor


def empty_strided(
    size: Sequence[int],
    stride: Sequence[int],
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """A tensor of shape ``size`` (zeros: there is no uninitialised memory); ``stride`` is
    checked, not kept, as every tensor here is laid out densely."""
    shape = check_strides(size, stride, "empty_strided")
    return cr.empty(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def scalar_tensor(
    s: Number | bool,
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool | None = None,
) -> Tensor:
    """A 0-dim tensor holding ``s``, of the default float dtype unless ``dtype`` is given
    (ints and bools too, unlike ``tw.tensor``)."""
    if isinstance(s, Tensor):  # PyTorch reads a one-element tensor as its number
        s = s.item()
    if dtype is None:
        dtype = cr.get_default_dtype()
    return cr.full((), s, dtype=dtype, device=device, requires_grad=requires_grad)


def fill(input: Tensor, value: Any) -> Tensor:
    """A new tensor of ``input``'s shape and dtype holding ``value`` (a number or a 0-dim
    tensor, which then gets the gradient: the sum of the output's)."""
    if not isinstance(value, Tensor):
        return cr.full_like(input, value)
    if value.ndim:
        raise RuntimeError(
            "fill only supports 0-dimension value tensor but got tensor with "
            f"{value.ndim} dimensions (shape {tuple(value.shape)}); pass value.squeeze() or a "
            "number"
        )
    return value.to(input.dtype).expand(input.shape).clone()
