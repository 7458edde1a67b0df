"""How a worker's batch travels to the main process.

A tensor holds its backend's native array, which need not survive pickling (and
``tw.Tensor`` refuses to be pickled). So a worker replaces every tensor in its batch
(walking dicts, lists, tuples and named tuples) by a :class:`HostTensor`: the host NumPy
array (``tensor.numpy()``; bfloat16 travels as float32, its ``numpy_name``), its dtype's name
and ``requires_grad``. The result is pickled in the worker, so that a batch that cannot be
pickled is reported as that worker's error instead of being lost in the queue's feeder
thread, and sent as bytes. The main process unpickles it and rebuilds each tensor with
``tw.tensor`` on the current default device (``tw.get_backend()``, or a ``tw.device``
context around the loop), with its dtype.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Mapping, MutableMapping
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.contract.dtypes import BY_NAME
from tensorweaver.tensor import Tensor


class HostTensor:
    """A tensor in transit: host array, dtype name, requires_grad."""

    __slots__ = ("array", "dtype", "requires_grad")

    def __init__(self, array: np.ndarray, dtype: str, requires_grad: bool) -> None:
        self.array = array
        self.dtype = dtype
        self.requires_grad = requires_grad

    def __reduce__(self) -> Any:
        return HostTensor, (self.array, self.dtype, self.requires_grad)


def _tree_map(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``value`` with ``leaf`` applied to everything that is not a dict, list or tuple;
    the containers keep their types (a mapping that cannot be rebuilt becomes a dict)."""
    if isinstance(value, Mapping):
        items = {k: _tree_map(v, leaf) for k, v in value.items()}
        if isinstance(value, MutableMapping):
            clone = copy.copy(value)  # keeps defaultdict's factory
            clone.update(items)
            return clone
        try:
            return type(value)(items)
        except TypeError:
            return items
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_tree_map(v, leaf) for v in value))
    if type(value) in (list, tuple):
        return type(value)(_tree_map(v, leaf) for v in value)
    return leaf(value)


def _to_host(value: Any) -> Any:
    if isinstance(value, Tensor):
        host = np.ascontiguousarray(np.asarray(value.detach()))
        return HostTensor(host, value.dtype.name, value.requires_grad)
    return value


def _from_host(value: Any) -> Any:
    if isinstance(value, HostTensor):
        return tw.tensor(value.array, dtype=BY_NAME[value.dtype], requires_grad=value.requires_grad)
    return value


def pack(batch: Any) -> bytes:
    """``batch`` as bytes to send (in a worker): tensors as :class:`HostTensor`."""
    return pickle.dumps(_tree_map(batch, _to_host), protocol=pickle.HIGHEST_PROTOCOL)


def unpack(payload: bytes) -> Any:
    """What :func:`pack` packed, with tensors rebuilt on the default device (main process)."""
    return _tree_map(pickle.loads(payload), _from_host)
