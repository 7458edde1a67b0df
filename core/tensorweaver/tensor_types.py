"""PyTorch's legacy tensor types: ``x.type()``, ``x.type('torch.LongTensor')`` and the
constructors ``tw.FloatTensor([1, 2])``, ``tw.FloatTensor(2, 3)``, ``isinstance(x,
tw.LongTensor)``.

``x.type()`` spells types as PyTorch does (``'torch.FloatTensor'``, ``'torch.cuda.FloatTensor'``
off the CPU), since scripts compare these strings with PyTorch's literals; ``x.type(...)`` also
accepts the ``tensorweaver.`` prefix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import creation, elementwise
from tensorweaver.tensor import Size, Tensor

NAMES: dict[DType, str] = {
    dtypes.bool_: "BoolTensor",
    dtypes.uint8: "ByteTensor",
    dtypes.int8: "CharTensor",
    dtypes.int16: "ShortTensor",
    dtypes.int32: "IntTensor",
    dtypes.int64: "LongTensor",
    dtypes.float16: "HalfTensor",
    dtypes.bfloat16: "BFloat16Tensor",
    dtypes.float32: "FloatTensor",
    dtypes.float64: "DoubleTensor",
    dtypes.complex64: "ComplexFloatTensor",  # names only: PyTorch has no such constructors
    dtypes.complex128: "ComplexDoubleTensor",
}
_BY_NAME = {name: dtype for dtype, name in NAMES.items()}


def _place(kind: str) -> str:
    """The module part of a type name for a device kind: ``''`` on the CPU, ``'cuda.'`` on
    CUDA and ROCm (as PyTorch spells both)."""
    if kind == "cpu":
        return ""
    return "cuda." if kind in ("cuda", "rocm") else f"{kind}."


def type_name(x: Tensor) -> str:
    """PyTorch's name of ``x``'s type, e.g. ``'torch.FloatTensor'``."""
    return f"torch.{_place(x.device.kind)}{NAMES[x.dtype]}"


def tensor_type(self: Tensor, dtype: Any = None, non_blocking: bool = False) -> Any:
    """``x.type()``: the type's name; ``x.type(t)``: ``x`` converted to the dtype that ``t``
    (a dtype, a legacy type such as ``tw.LongTensor`` or its name) stands for.
    ``non_blocking`` is accepted for PyTorch's signature."""
    if dtype is None:
        return type_name(self)
    if isinstance(dtype, _TensorType):
        dtype = dtype.dtype
    elif isinstance(dtype, str):
        dtype = _parse(dtype, self)
    elif not isinstance(dtype, DType):
        raise ValueError(
            f"type(): invalid type: {dtype!r}; pass a dtype or a name like 'torch.FloatTensor'"
        )
    # (a user's copy: CopyBackwards for an inference tensor that requires grad, as PyTorch)
    return elementwise.as_copy_of(elementwise.cast(self, dtype), self)


def _parse(spec: str, x: Tensor) -> DType:
    """The dtype a type name such as ``'torch.cuda.LongTensor'`` names, on ``x``'s device."""
    head, _, name = spec.rpartition(".")
    prefix = next((p for p in ("torch.", "tensorweaver.") if (head + ".").startswith(p)), None)
    if prefix is None or name not in _BY_NAME:
        raise ValueError(
            f"type(): invalid type: {spec!r}; expected a name like 'torch.FloatTensor' "
            f"({', '.join(NAMES.values())})"
        )
    place = (head + ".")[len(prefix) :]
    if place != _place(x.device.kind):
        raise ValueError(
            f"type({spec!r}): the tensor is on {x.device.name}; moving it by type name is "
            "not supported, use x.to(device, dtype)"
        )
    return _BY_NAME[name]


class _TensorType(type):
    """The class of ``tw.FloatTensor`` and the like: calling one makes a CPU-style tensor of
    its dtype on the current device; ``isinstance`` checks a tensor's dtype and device."""

    dtype: DType

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.kind == "cpu"

    def __call__(cls, *args: Any, device: Any = None) -> Tensor:
        dtype = cls.dtype
        if not args:
            return creation.empty(0, dtype=dtype, device=device)
        if (len(args) == 1 and isinstance(args[0], Size)) or all(_is_int(a) for a in args):
            return creation.empty(*args, dtype=dtype, device=device)
        if len(args) > 1:
            raise TypeError(f"{cls.__name__}(): pass sizes as integers or one sequence of data")
        data = args[0]
        if isinstance(data, Tensor):
            if data.dtype is not dtype:
                raise TypeError(
                    f"{cls.__name__}(): expected a {dtype.name} tensor, got {data.dtype.name}; "
                    f"convert it with x.type(tw.{cls.__name__})"
                )
            return data
        if not isinstance(data, (list, tuple, np.ndarray)):
            raise TypeError(f"{cls.__name__}(): data must be a sequence, got {type(data).__name__}")
        return creation.tensor(data, dtype=dtype, device=device)

    @property
    def is_cuda(cls) -> bool:
        return False


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _legacy(name: str, dtype: DType) -> _TensorType:
    return _TensorType(name, (), {"dtype": dtype, "__module__": "tensorweaver"})


BoolTensor = _legacy("BoolTensor", dtypes.bool_)
ByteTensor = _legacy("ByteTensor", dtypes.uint8)
CharTensor = _legacy("CharTensor", dtypes.int8)
ShortTensor = _legacy("ShortTensor", dtypes.int16)
IntTensor = _legacy("IntTensor", dtypes.int32)
LongTensor = _legacy("LongTensor", dtypes.int64)
HalfTensor = _legacy("HalfTensor", dtypes.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", dtypes.bfloat16)
FloatTensor = _legacy("FloatTensor", dtypes.float32)
DoubleTensor = _legacy("DoubleTensor", dtypes.float64)
