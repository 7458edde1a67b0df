"""Python numbers into tensors: PyTorch's overflow rules, with messages that name the value.

PyTorch reads Python data (numbers, nested lists, NumPy scalars, tensors inside lists) as
the default float dtype when it holds a float, else as int64 (bool when all are bools),
and refuses what does not fit:

* an int outside int64 where ints are read as int64: ``ValueError`` in ``tensor`` (floats
  beside it make the data float, and then it is fine), ``OverflowError`` for ``full``'s
  fill value;
* a number for an integer dtype: a float must lie in the dtype's range (it is then
  truncated toward zero; NaN never fits), an int too, except that an unsigned dtype also
  takes negative ints down to ``-max``, which wrap around: ``RuntimeError``. Each number
  follows its own type's rule, also where ints and floats are mixed (``[-1, 0.5]`` is
  ``[255, 0]`` in uint8);
* ``full``'s fill value for a float dtype: a finite value beyond the dtype's largest,
  ``RuntimeError`` (``tensor`` makes it inf instead, as PyTorch does).

NumPy arrays and tensors handed over whole are cast without checks, as in PyTorch. NumPy
itself would turn such data into object arrays, uint64 or, mixing int64 with uint64,
float64; :func:`host_array` sorts that out.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType

_INT64 = (-(2**63), 2**63 - 1)
_INT_RANGE = {
    d: (int(np.iinfo(d.numpy_name).min), int(np.iinfo(d.numpy_name).max))
    for d in dtypes.ALL
    if d.kind in "iu"
}
_FLOAT_MAX = {
    dtypes.float16: float(np.finfo(np.float16).max),
    dtypes.bfloat16: (2 - 2**-7) * 2.0**127,
    dtypes.float32: float(np.finfo(np.float32).max),
    dtypes.float64: sys.float_info.max,
}
_NUMBERS = (bool, int, float, np.bool_, np.number)


def _wide(array: np.ndarray) -> bool:
    """Whether NumPy may have met an int outside int64 in Python data that gave ``array``."""
    kind = array.dtype.kind
    if kind == "O" or (kind == "u" and array.dtype.itemsize == 8):
        return True
    # float64 is NumPy's promotion of int64 with uint64: look for values past int64 (NaN is
    # never among them; inf sends float data the long way, which reads it right).
    return array.dtype == np.float64 and array.size > 0 and bool(np.abs(array).max() >= 2.0**63)


def host_array(array: np.ndarray, data: Any, dtype: DType | None) -> np.ndarray:
    """``array`` (NumPy's reading of Python ``data``) as PyTorch reads ``data`` for ``dtype``
    (None: inferred): floats, int64 or bools, or the overflow error."""
    if dtype is not None and dtype.kind in "iu" and array.dtype.kind == "f":
        return _each_by_its_type(array, data, dtype)
    if not _wide(array):
        return array
    values = np.asarray(data, dtype=object)
    flat = values.reshape(-1)
    if not all(isinstance(v, _NUMBERS) for v in flat):
        return array  # not numbers: tensor() says what it cannot read
    if dtype is dtypes.bool_:
        return values.astype(bool)
    if (dtype is not None and dtype.is_floating_point) or any(
        isinstance(v, (float, np.floating)) for v in flat
    ):
        huge = [v for v in flat if isinstance(v, int) and abs(v) > sys.float_info.max]
        if huge:
            raise OverflowError(
                f"tensor(): overflow: the integer {_shown(huge[0])} is too large for any float "
                f"dtype (float64 reaches about {sys.float_info.max:.4g})"
            )
        return values.astype(np.float64)
    for v in flat:
        if not _INT64[0] <= v <= _INT64[1]:
            raise ValueError(
                f"tensor(): overflow: the integer {_shown(v)} does not fit in int64, whose range "
                f"is [{_INT64[0]}, {_INT64[1]}]; write it as a float (or pass dtype=tw.float64) "
                "for a float tensor"
            )
    return values.astype(np.int64)


def _each_by_its_type(array: np.ndarray, data: Any, dtype: DType) -> np.ndarray:
    """Float data for the integer ``dtype``: when ints are among the floats, each number
    converted by its own type's rule (an int may wrap into an unsigned dtype, a float may
    not), as PyTorch does, instead of NumPy's reading of them all as floats."""
    values = np.asarray(data, dtype=object)
    flat = values.reshape(-1)
    if not any(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in flat):
        return array
    converted = [fill_value(v, dtype, "tensor()") for v in flat]
    return np.asarray(converted, dtype=np.int64).reshape(values.shape)


def float_max(dtype: DType) -> float:
    """The largest finite value of the floating-point ``dtype``."""
    return _FLOAT_MAX[dtype]


def cast_float(value: float, dtype: DType) -> float:
    """``value`` as a cast to the floating-point ``dtype`` gives it, overflow included
    (1e39 is inf in float32): what PyTorch's unchecked conversions of numbers do."""
    return value if not abs(value) > _FLOAT_MAX[dtype] else math.copysign(math.inf, value)


def int_range(dtype: DType) -> tuple[int, int]:
    """The smallest and largest value of the integer ``dtype``."""
    return _INT_RANGE[dtype]


def _shown(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else f"{text[:12]}...{text[-4:]} ({len(text)} digits)"


def _refuse(value: Any, dtype: DType, fn: str) -> None:
    low, high = _INT_RANGE[dtype]
    wrap = f"; negative integers down to {-high} wrap around" if dtype.kind == "u" else ""
    raise RuntimeError(
        f"{fn}: overflow: the value {_shown(value)} cannot be converted to {dtype.name}, whose "
        f"range is [{low}, {high}]{wrap}"
    )


def check_fits(values: np.ndarray, dtype: DType, fn: str) -> None:
    """Raise PyTorch's RuntimeError when a Python number in ``values`` does not fit the
    integer ``dtype`` (see the module for the rule)."""
    low, high = _INT_RANGE[dtype]
    kind = values.dtype.kind
    if kind == "f":
        bad = ~((values >= low) & (values <= high) & (values < 2.0**63))  # NaN is bad too
    elif kind in "iu" and np.dtype(values.dtype) != np.dtype(dtype.numpy_name):
        bad = (values < (-high if dtype.kind == "u" else low)) | (values > high)
    else:
        return  # bools, or ints already of this dtype
    if bad.any():
        _refuse(values[bad].flat[0].item(), dtype, fn)


def _half_stored(value: float, dtype: DType) -> float:
    """A number beyond float16's or bfloat16's range as PyTorch's ``setitem`` stores it,
    unchecked (where ``full`` and ``fill_`` refuse): rounded to float32, then to ``dtype``,
    so 65519.9 becomes 65504 and 65520 or 1e6 infinity in float16."""
    with np.errstate(over="ignore"):
        single = float(np.float32(value))
    top = _FLOAT_MAX[dtype]
    # past the midpoint of the largest finite value and the next power of two: infinity
    if abs(single) >= (top + 2.0 ** math.ceil(math.log2(top))) / 2:
        return math.copysign(math.inf, single)
    return math.copysign(top, single) if abs(single) > top else single


def fill_value(value: Any, dtype: DType, fn: str) -> Any:
    """A number for ``full`` as the backend should get it for ``dtype`` (an int in range for
    integer dtypes), after PyTorch's overflow checks; other values are returned as they are."""
    kind = type(value)
    if (kind is float or kind is int) and dtype.kind == "f":  # the usual case, quickly
        if kind is float:
            if not abs(value) > _FLOAT_MAX[dtype] or abs(value) == math.inf:  # NaN passes
                return value
        elif _INT64[0] <= value <= _INT64[1] and abs(value) <= _FLOAT_MAX[dtype]:
            return value
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, complex) and dtype is dtypes.bool_:
        return bool(value)  # nonzero in either part, nothing discarded
    if isinstance(value, complex) and not dtype.is_complex:
        if value.imag:
            raise RuntimeError(
                f"{fn}: overflow: the value {value} cannot be converted to {dtype.name} (its "
                "imaginary part is not zero); pass value.real, or use a complex dtype"
            )
        value = value.real
    if value is None or isinstance(value, (str, bytes)):  # PyTorch's class; NumPy takes them
        raise TypeError(
            f"{fn}: the value must be a Number or a Tensor, not {type(value).__name__} "
            f"{value!r}; convert it first, e.g. float(s)"
        )
    if not isinstance(value, (int, float)):  # bools are ints
        return value
    if isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]:
        if 0 <= value < 2**64:  # PyTorch reads it as a uint64, then converts that
            if dtype.kind in "fc":
                return fill_value(float(value), dtype, fn)
            if dtype is dtypes.bool_:
                return True
            _refuse(value, dtype, fn)  # its RuntimeError: no integer dtype holds it
        raise OverflowError(
            f"{fn}: overflow: the fill value {_shown(value)} does not fit in int64, whose range is "
            f"[{_INT64[0]}, {_INT64[1]}]; pass a float for larger numbers"
        )
    if dtype is dtypes.bool_:
        return bool(value)
    if dtype.is_complex:
        return complex(value)
    if dtype.is_floating_point:
        if value == value and abs(value) != float("inf") and abs(value) > _FLOAT_MAX[dtype]:
            if fn == "setitem" and dtype.itemsize == 2:
                return _half_stored(value, dtype)
            raise RuntimeError(
                f"{fn}: overflow: the value {value} cannot be converted to {dtype.name}, whose "
                f"largest finite value is {_FLOAT_MAX[dtype]:.8g}"
            )
        return value
    low, high = _INT_RANGE[dtype]
    if isinstance(value, float):
        if not (low <= value <= high and value < 2.0**63):
            _refuse(value, dtype, fn)
        return int(value)
    if not (-high if dtype.kind == "u" else low) <= value <= high:
        _refuse(value, dtype, fn)
    return value % (high + 1) if dtype.kind == "u" else value
