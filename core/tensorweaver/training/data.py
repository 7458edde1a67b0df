"""Turn what ``tw.fit`` is given as data into batches of tensors on the training device.

In-memory data (an ``(X, y)`` pair of tensors or arrays, or a ``TensorDataset``) is moved to
the device and cast once, before the first epoch; batches are then slices of device tensors.
Batches of any other ``Dataset`` or of a user's ``DataLoader`` are moved as they come.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Union

import numpy as np

import tensorweaver as tw
from tensorweaver.contract.dtypes import DType
from tensorweaver.nn.modules.module import Module
from tensorweaver.selection import Device
from tensorweaver.tensor import Tensor
from tensorweaver.utils.data import DataLoader, Dataset, TensorDataset

Data = Union[tuple, list, Dataset, DataLoader]


def to_device(t: Any, device: Device, dtype: DType) -> Tensor:
    """``t`` (a tensor, array or nested list) as a tensor on ``device``; floating point data
    cast to ``dtype`` (the model's), integer and bool data kept as they are."""
    if not isinstance(t, Tensor):
        t = tw.as_tensor(np.asarray(t), device=device)
    if t.device != device:
        t = t.to(device)
    if t.dtype.is_floating_point and t.dtype is not dtype:
        t = t.to(dtype)
    return t


def as_batches(
    data: Data,
    *,
    device: Device,
    dtype: DType,
    batch_size: int,
    shuffle: bool,
    seed: int | None,
    owner: str,
) -> Iterable[Any]:
    """A ``DataLoader`` over ``data`` (or ``data`` itself when it is one) whose in-memory
    tensors already live on ``device``; ``owner`` names the argument in errors."""
    if isinstance(data, DataLoader):
        return data
    if isinstance(data, (tuple, list)):
        if len(data) != 2:
            raise ValueError(
                f"{owner} as a tuple must be (inputs, targets), got {len(data)} items; pass a "
                "Dataset or DataLoader for anything else"
            )
        data = TensorDataset(*(to_device(part, device, dtype) for part in data))
    elif type(data) is TensorDataset:
        data = TensorDataset(*(to_device(t, device, dtype) for t in data.tensors))
    elif not isinstance(data, Dataset):
        raise TypeError(
            f"{owner} must be an (inputs, targets) tuple of tensors or NumPy arrays, a Dataset "
            f"or a DataLoader; got {type(data).__name__}"
        )
    return DataLoader(data, batch_size=batch_size, shuffle=shuffle, seed=seed)


def split_off(data: Data, fraction: float) -> tuple[Data, Data]:
    """``(train, val)``: the last ``fraction`` of ``data``'s samples held out for validation,
    as Keras' ``validation_split`` (taken before any shuffling). ``data`` is an
    ``(inputs, targets)`` pair or a ``TensorDataset``."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction < 1:
        raise ValueError(
            f"fit: validation_split must be a fraction between 0 and 1, got {fraction!r}"
        )
    if type(data) is TensorDataset:
        data = tuple(data.tensors)
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise ValueError(
            "fit: validation_split needs train_data as an (inputs, targets) pair or a "
            f"TensorDataset, got {type(data).__name__}; pass val= for other data"
        )
    n = len(data[0])
    cut = int(n * (1 - fraction))
    if cut == 0:
        raise ValueError(
            f"fit: validation_split={fraction} of {n} samples leaves no training samples"
        )
    return (data[0][:cut], data[1][:cut]), (data[0][cut:], data[1][cut:])


def split_batch(batch: Any, device: Device, dtype: DType, owner: str) -> tuple[Tensor, Tensor]:
    """``(inputs, targets)`` of one batch, on ``device``."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        got = f"{len(batch)} items" if isinstance(batch, (tuple, list)) else type(batch).__name__
        raise ValueError(f"{owner}: each batch must be (inputs, targets), got {got}")
    return to_device(batch[0], device, dtype), to_device(batch[1], device, dtype)


def placement(model: Module) -> tuple[Device, DType]:
    """Where ``model`` lives and the floating point dtype its inputs should have: those of
    its first parameter (or buffer); the current device and default dtype if it has none."""
    tensors = [*model.parameters(), *model.buffers()]
    device = tensors[0].device if tensors else tw.get_backend()
    floating = [t.dtype for t in tensors if t.dtype.is_floating_point]
    return device, floating[0] if floating else tw.get_default_dtype()
