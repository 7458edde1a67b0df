"""Memory shared with host code (API 2.2), on the CPU only, as ``torch.from_numpy`` and
``torch.Tensor.numpy`` share it. Other devices answer None / False: the core copies."""

from __future__ import annotations

import sys
import warnings
from typing import Optional

import numpy as np
import torch

Tensor = torch.Tensor


def _references_views_hold() -> int:
    """How many references to a tensor's Python object its live views add (1 where torch
    keeps the Python object of a tensor alive while C++ refers to it, as 2.13 does, for any
    number of views; 0 where it does not), measured once on this torch."""
    base = torch.zeros(2)
    alone = sys.getrefcount(base)
    view = base[1:]
    held = sys.getrefcount(base) - alone
    del view
    return held


_VIEWS_HOLD = _references_views_hold()

#: (bound once: owns_memory runs once a parameter update, where the look-ups of
#: torch._C._storage_Use_Count were ~0.1 of its ~0.9 us)
_storage_use_count = torch._C._storage_Use_Count


class HostMemory:
    """The optional host-memory methods of :data:`tensorweaver.contract.ir.OPTIONAL`."""

    _on_cpu: bool

    def wrap_host(self, array: np.ndarray) -> Optional[Tensor]:
        if not self._on_cpu:
            return None
        with warnings.catch_warnings():
            # A read-only array: the core has warned as PyTorch does, and never writes into it.
            warnings.simplefilter("ignore", UserWarning)
            return torch.from_numpy(array)

    def host_view(self, a: Tensor) -> Optional[np.ndarray]:
        if not self._on_cpu or a.dtype is torch.bfloat16:
            return None
        return a.numpy()

    def write_into(self, dst: Tensor, src: Tensor) -> bool:
        if not self._on_cpu:
            return False
        # (an empty tensor repeats nothing, whatever strides torch gives it)
        if dst.numel() and any(s == 0 and n > 1 for s, n in zip(dst.stride(), dst.shape)):
            return False
        if src.untyped_storage().data_ptr() == dst.untyped_storage().data_ptr():
            src = src.clone()  # torch refuses some overlapping copies
        dst.copy_(src)
        return True

    def storage(self, a: Tensor) -> Optional[object]:
        return a.untyped_storage() if self._on_cpu else None

    def owns_memory(self, a: Tensor) -> bool:
        # No view of another tensor, and no other tensor over its storage: a storage's use
        # count is 2 then (the tensor's and the Python storage object's). A view keeps the
        # storage, not the tensor's Python object, so the core's reference count misses it.
        return (
            type(a) is Tensor
            and not a.requires_grad
            and not a._is_view()
            and _storage_use_count(a.untyped_storage()._cdata) == 2
        )

    def memory_users(self, a: Tensor, views: list) -> Optional[int]:
        # Every TensorImpl over the storage uses it once (a Python storage object too, the
        # one made here), a view's link to its root base uses the base once more, and a
        # graph or DLPack capsule that holds a tensor uses that tensor once more: with exact
        # counts, nothing but a and views sees the memory. A storage torch cannot resize is
        # memory another library lent (torch.from_numpy, DLPack), which the core cannot see.
        if not self._on_cpu or type(a) is not Tensor or a._is_view() or a.requires_grad:
            return None
        storage = a.untyped_storage()
        if not storage.resizable():
            return None
        if _storage_use_count(storage._cdata) != 2 + len(views):
            return None
        linked = 0
        for v in views:
            if v._use_count() != 1:  # (a graph saved it, or it was exported)
                return None
            linked += v._is_view()  # (a view of another itemsize is no view of a: no link)
        if a._use_count() != 1 + linked:
            return None
        return _VIEWS_HOLD if linked else 0

    def strides(self, a: Tensor) -> Optional[tuple[int, ...]]:
        # (no address or offset read: is_contiguous and stride() on every linear's input)
        return tuple(a.stride())

    def layout(self, a: Tensor) -> Optional[tuple[tuple[int, ...], int, int]]:
        try:
            address = a.data_ptr()
        except RuntimeError:  # torch.export's FakeTensor: strides without memory behind them
            address = 0
        return tuple(a.stride()), a.storage_offset(), address
