"""How a worker's batch travels to the main process.

A tensor holds its backend's native array, which need not survive pickling (and
``tw.Tensor`` refuses to be pickled). So a worker replaces every tensor in its batch
(walking dicts, lists, tuples and named tuples) by a :class:`HostTensor`: the host NumPy
array (``tensor.numpy()``; bfloat16 travels as float32, its ``numpy_name``), its dtype's name,
``requires_grad``, and its device unless it is the host's. The result is pickled in the
worker, so that a batch that cannot be pickled is reported as that worker's error instead of
being lost in the queue's feeder thread, and sent as bytes. The main process unpickles it and
rebuilds each tensor with ``tw.tensor``, with its dtype: a tensor the worker made (on the
host, where workers make tensors) on the current default device (``tw.get_backend()``, or a
``tw.device`` context around the loop), where it would have been made without workers; a
tensor on another device (a dataset's ``torch:cpu`` tensors, say) on that device, as without
workers. Differs from ``num_workers=0``: a dataset's own host (NumPy) tensors, which the main
process cannot tell from those the worker made, also come back on the default device.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Mapping, MutableMapping
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.contract.dtypes import BY_NAME
from tensorweaver.registry import DEFAULT_BACKEND as HOST
from tensorweaver.tensor import Tensor


class HostTensor:
    """A tensor in transit: host array, dtype name, requires_grad, and the name of its device
    (None: the host's, so the main process's default device)."""

    __slots__ = ("array", "dtype", "requires_grad", "device")

    def __init__(
        self, array: np.ndarray, dtype: str, requires_grad: bool, device: str | None
    ) -> None:
        self.array = array
        self.dtype = dtype
        self.requires_grad = requires_grad
        self.device = device

    def __reduce__(self) -> Any:
        return HostTensor, (self.array, self.dtype, self.requires_grad, self.device)


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
        device = None if value.device.backend == HOST else value.device.name
        return HostTensor(host, value.dtype.name, value.requires_grad, device)
    return value


def _from_host(value: Any) -> Any:
    if isinstance(value, HostTensor):
        dtype = BY_NAME[value.dtype]
        return tw.tensor(
            value.array, dtype=dtype, device=value.device, requires_grad=value.requires_grad
        )
    return value


def pack(batch: Any) -> bytes:
    """``batch`` as bytes to send (in a worker): tensors as :class:`HostTensor`."""
    return pickle.dumps(_tree_map(batch, _to_host), protocol=pickle.HIGHEST_PROTOCOL)


def unpack(payload: bytes) -> Any:
    """What :func:`pack` packed, with tensors rebuilt on their devices (main process)."""
    return _tree_map(pickle.loads(payload), _from_host)
