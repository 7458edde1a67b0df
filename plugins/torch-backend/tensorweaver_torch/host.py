"""Memory shared with host code (API 2.2), on the CPU only, as ``torch.from_numpy`` and
``torch.Tensor.numpy`` share it. Other devices answer None / False: the core copies."""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np
import torch

Tensor = torch.Tensor


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
            and not a._is_view()
            and not a.requires_grad
            and torch._C._storage_Use_Count(a.untyped_storage()._cdata) == 2
        )

    def layout(self, a: Tensor) -> Optional[tuple[tuple[int, ...], int, int]]:
        try:
            address = a.data_ptr()
        except RuntimeError:  # torch.export's FakeTensor: strides without memory behind them
            address = 0
        return tuple(a.stride()), a.storage_offset(), address
