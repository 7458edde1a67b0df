"""The arrays of optimizers' scalar state tensors (``step``, NAdam's ``mu_product``, ...),
one per recent value, shared by the tensors that hold it.

Each step gives every parameter's ``state["step"]`` the same new count. A 0-d array made
for each tensor cost 0.3 us (NumPy) to 1.4 us (torch:cpu) per parameter and step, and
reading it back with ``item()`` 0.4 to 1.2 us. The core treats arrays as values: nothing
writes into an array that tensors hold (in-place methods rebind their tensor to a new
array; a tensor whose memory NumPy shares first moves to an array of its own, and NumPy's
writes and the core's go there; a compiler writes only into an array nothing else holds).
So one array serves every tensor given its value, and a tensor that still holds one of
these arrays holds its value: a user's change of the tensor, whatever its route, rebinds
it to another array.
"""

from __future__ import annotations

import threading
from typing import Any

import tensorweaver as tw
from tensorweaver.tensor import Tensor

#: How many values keep their arrays (those of older values are read back as others are).
_RECENT = 8

#: Integers up to this size are exact in float32.
_EXACT = float(1 << 24)

#: (backend, dtype, value) -> the 0-d array of ``value``.
_ARRAYS: dict[tuple, Any] = {}
#: id(array) -> (array, its value as ``item()`` reads it).
_VALUES: dict[int, tuple[Any, Any]] = {}
# Several threads may step optimizers at once. Only a new value's array changes the tables
# (its backend call costs far more than the lock); reads take single dict lookups, atomic.
_CHANGING = threading.Lock()


def put(tensor: Tensor, value: float) -> None:
    """Give the 0-d ``tensor`` (without autograd history) the value ``value`` as a write
    through ``tensor.data`` does: a new version, seen by its aliases and views."""
    tensor._take(array_of(tensor, value))


def array_of(tensor: Tensor, value: float) -> Any:
    """The 0-d array that :func:`put` gives ``tensor`` for ``value`` (a compiled replay's
    operand where the step uses the tensor after writing it)."""
    backend, dtype = tensor.backend, tensor.dtype
    if not (value and value - value == 0):  # (0.0 and -0.0 are one key; nan none)
        return backend.full((), value, dtype)
    key = (backend, dtype, value)
    array = _ARRAYS.get(key)
    if array is None:
        array = backend.full((), value, dtype)
        if type(value) is float and (
            dtype is tw.float64
            or (dtype is tw.float32 and value.is_integer() and -_EXACT <= value <= _EXACT)
        ):
            held = value  # (a count, or any float64: the array holds it exactly)
        else:
            held = backend.to_host(array).reshape(()).item()
        with _CHANGING:
            made = _ARRAYS.get(key)
            if made is not None:  # (another thread made it meanwhile: one array per value)
                return made
            if len(_ARRAYS) >= _RECENT:
                _VALUES.pop(id(_ARRAYS.pop(next(iter(_ARRAYS)))), None)
            _ARRAYS[key] = array
            _VALUES[id(array)] = (array, held)
    return array


def get(tensor: Tensor) -> Any:
    """``tensor.item()``, without a read from the backend where ``tensor`` holds an array
    that :func:`put` made (so it holds that array's value)."""
    value = value_of(tensor.native)
    return tensor.item() if value is None else value


def value_of(array: Any) -> Any:
    """The value of ``array`` if :func:`put` made it (and gives it to every tensor of that
    value), else None."""
    known = _VALUES.get(id(array))
    return known[1] if known is not None and known[0] is array else None
