"""The tensors of a ``torch.save`` checkpoint, made from the records :mod:`.torch_globals` gives
(storages, and tensors over them), placed by ``map_location`` as ``torch.load`` places them.

A tensor that is the only one over its storage, and all of it in C order, is made on its own;
tensors sharing a storage (views, tied weights, offsets, strides, an empty tensor's strides)
are views of one TensorWeaver tensor of the storage (:func:`.storages.view`, within the same
bounds as TensorWeaver's own shared tensors), so that a write through one shows in the others
as in PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Callable, NoReturn

import numpy as np

from tensorweaver.errors import UnknownBackendError
from tensorweaver.serialization import storages
from tensorweaver.serialization.codes import float32_from_bfloat16_bits
from tensorweaver.serialization.errors import SafetensorsError
from tensorweaver.serialization.limits import MAX_RANK
from tensorweaver.serialization.torch_globals import ParameterRecord, Storage, TensorRecord


class TensorMaker:
    """Makes the tensors of one checkpoint from its records, each storage read once (by
    ``read``, which gives its elements as a host array)."""

    def __init__(
        self,
        read: Callable[[Storage], np.ndarray],
        map_location: Any,
        where: str,
    ) -> None:
        self.read, self.map_location, self.where = read, map_location, where
        # PyTorch's function form, map_location(storage, location) -> storage or None
        self.function = (
            map_location
            if callable(map_location) and not isinstance(map_location, (Mapping, _device_type()))
            else None
        )
        self.storages: dict[str, Any] = {}
        self.made: dict[int, Any] = {}
        self.budget = storages.Budget()

    def fail(self, what: str) -> NoReturn:
        raise SafetensorsError(f"tw.load: {self.where} {what}")

    def tensor(self, record: Any) -> Any:
        """The tensor or Parameter of ``record``, made once."""
        import tensorweaver as tw

        if id(record) not in self.made:
            if isinstance(record, ParameterRecord):
                out = tw.nn.Parameter(self.tensor(record.data), record.requires_grad)
            else:
                out = self._tensor(record)
            self.made[id(record)] = (record, out)
        return self.made[id(record)][1]

    def _tensor(self, record: TensorRecord) -> Any:
        s, size, stride, offset = record.storage, record.size, record.stride, record.offset
        name = f"storage {s.key!r}"
        if len(size) > MAX_RANK or any(not 0 <= n < 2**62 for n in (*size, *stride, offset)):
            self.fail(
                f"has a tensor over {name} with sizes {size}, strides {stride} and offset "
                f"{offset}: each must be in 0..2**62, in at most {MAX_RANK} dimensions"
            )
        if record.requires_grad and not (s.dtype.is_floating_point or s.dtype.is_complex):
            self.fail(f"has a {s.dtype.name} tensor over {name} that requires grad")
        # (an empty tensor keeps its strides only as a view: made from an array it has 0s)
        whole = offset == 0 and 0 < math.prod(size) == s.numel and _contiguous(size, stride)
        if whole and s.uses == 1 and self.function is None:
            out = self._made(s, self.read(s).reshape(size), self._device(s.location))
        else:
            base = self._storage_tensor(s)
            out = storages.view(
                base, name, (None, list(size), list(stride), offset), self.budget, self.fail
            )
        return out.requires_grad_() if record.requires_grad else out

    def _storage_tensor(self, s: Storage) -> Any:
        """The 1-d tensor of storage ``s``, made once, placed by ``map_location``."""
        import tensorweaver as tw

        if s.key in self.storages:
            return self.storages[s.key]
        if self.function is None:
            out = self._made(s, self.read(s), self._device(s.location))
        else:  # as torch: the function gets the storage on the CPU and its saved location
            cpu = self._made(s, self.read(s), "cpu")
            out = self.function(cpu, s.location)
            if out is None:
                out = cpu if s.location == "cpu" else cpu.to(s.location)
            if not (isinstance(out, tw.Tensor) and out.numel() == s.numel and out.dtype is s.dtype):
                raise TypeError(
                    f"tw.load: map_location function returned {type(out).__name__} for storage "
                    f"{s.key!r}; it must return the storage it was given (moved if you like) "
                    "or None"
                )
        self.storages[s.key] = out
        return out

    def _made(self, s: Storage, host: np.ndarray, device: Any) -> Any:
        import tensorweaver as tw

        try:
            return tw.tensor(_values(s, host), dtype=s.dtype, device=device)
        except UnknownBackendError as e:  # a location torch has and TensorWeaver has not
            if self.map_location is not None:  # the user's own device spec: its own error
                raise
            self.fail(
                f"saved storage {s.key!r} on {s.location!r}, which TensorWeaver cannot place "
                f"there ({e}); pass map_location (e.g. 'cpu')"
            )
        except TypeError as e:  # the device lacks the dtype (bfloat16 on NumPy, say)
            raise TypeError(
                f"tw.load: storage {s.key!r} of {self.where} cannot be made on {device!r}: {e}; "
                "pass map_location naming a device that has this dtype (e.g. 'torch:cpu')"
            ) from e

    def _device(self, location: str) -> Any:
        where = self.map_location
        if where is None:
            return location
        if isinstance(where, Mapping):
            return where.get(location, location)
        return where


def _device_type() -> type:
    import tensorweaver as tw

    return tw.Device


def _values(s: Storage, host: np.ndarray) -> np.ndarray:
    """The host array a tensor of the storage's dtype is made from."""
    if s.dtype.name == "bfloat16":
        return float32_from_bfloat16_bits(host)
    if s.dtype.name == "bool":
        return host.view(np.uint8) != 0
    return host


def _contiguous(size: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    expected = 1
    for n, s in zip(reversed(size), reversed(stride)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True
