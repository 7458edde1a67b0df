"""``Tensor.apply_(callable)`` and ``Tensor.map_(other, callable)``: a Python function
applied to each element (of ``self``, or of ``self`` and ``other`` broadcast to it), the
result written back in place. As in PyTorch these are slow (one Python call per element),
run on the host whatever the device, and refuse tensors that require grad."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweaver.ops import creation as cr
from tensorweaver.tensor import Tensor


def _check(self: Tensor, fn: str) -> None:
    if self.requires_grad:
        raise RuntimeError(
            f"Can't call {fn}() on Variable that requires grad. Use var.detach().{fn}() instead."
        )


def _written(self: Tensor, values: list, fn: str) -> Tensor:
    host = np.asarray(values, dtype=self.dtype.numpy_name).reshape(tuple(self.shape))
    return self._assign(cr.tensor(host, dtype=self.dtype, device=self.device), fn)


def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:  # noqa: A002
    _check(self, "apply_")
    values = self.backend.to_host(self.native).ravel().tolist()
    return _written(self, [callable(v) for v in values], "apply_")


def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:  # noqa: A002
    _check(self, "map_")
    if tensor.dtype is not self.dtype:
        raise TypeError(
            f"map_: expected a {self.dtype.name} tensor for 'other' (got {tensor.dtype.name}); "
            f"convert it with .to({self.dtype.name})"
        )
    other = tensor.expand_as(self)
    mine = self.backend.to_host(self.native).ravel().tolist()
    theirs = other.backend.to_host(other.native).ravel().tolist()
    return _written(self, [callable(a, b) for a, b in zip(mine, theirs)], "map_")
