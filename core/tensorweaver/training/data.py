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
    parts: int = 2,
) -> Iterable[Any]:
    """A ``DataLoader`` over ``data`` (or ``data`` itself when it is one) whose in-memory
    tensors already live on ``device``; ``owner`` names the argument in errors. A tuple
    ``data`` has ``parts`` items: 3 for :func:`with_weights`'s."""
    if isinstance(data, DataLoader):
        return data
    if isinstance(data, (tuple, list)):
        if len(data) != parts:
            raise ValueError(
                f"{owner} as a tuple must be (inputs, targets), got {len(data)} items; pass a "
                "Dataset or DataLoader for anything else"
            )
        parts_on_device = [to_device(part, device, dtype) for part in data]
        sizes = [part.shape[0] if part.ndim else "0-d" for part in parts_on_device]
        if len(set(sizes)) > 1:  # tw.fit's own check: TensorDataset's is PyTorch's assert
            raise ValueError(f"{owner}: inputs and targets need one number of samples, got {sizes}")
        data = TensorDataset(*parts_on_device)
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
    ``(inputs, targets)`` pair or a ``TensorDataset``, or :func:`with_weights`'s triple,
    whose weights stay with the training part (validation is unweighted)."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction < 1:
        raise ValueError(
            f"fit: validation_split must be a fraction between 0 and 1, got {fraction!r}"
        )
    if type(data) is TensorDataset:
        data = tuple(data.tensors)
    if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
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
    return tuple(part[:cut] for part in data), (data[0][cut:], data[1][cut:])


def with_weights(
    data: Data, sample_weight: Any | None, class_weight: dict[int, float] | None
) -> tuple[Any, Any, Any]:
    """``(inputs, targets, weights)``: ``data`` (a pair or a ``TensorDataset``) with one
    training weight per sample, given (``sample_weight``, a tensor or array of length N)
    or each sample's class's (``class_weight``, ``{class: weight}``, as Keras: classes left
    out weigh 1; the targets are integer class indices)."""
    if sample_weight is not None and class_weight is not None:
        raise ValueError("fit: pass sample_weight or class_weight, not both (as Keras)")
    if type(data) is TensorDataset:
        data = tuple(data.tensors)
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise ValueError(
            "fit: sample_weight and class_weight need train_data as an (inputs, targets) pair "
            f"or a TensorDataset, got {type(data).__name__}"
        )
    x, y = data
    weights = sample_weight if class_weight is None else _class_weights(y, class_weight)
    shape = tuple(weights.shape) if isinstance(weights, Tensor) else np.shape(weights)
    if shape != (len(x),):
        raise ValueError(
            f"fit: sample_weight must hold one weight per training sample, shape ({len(x)},), "
            f"got shape {shape}"
        )
    return x, y, weights


def _class_weights(targets: Any, class_weight: dict[int, float]) -> np.ndarray:
    if not isinstance(class_weight, dict) or not all(
        isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0
        for k in class_weight
    ):
        raise ValueError(
            "fit: class_weight must be a dict {class index (int >= 0): weight}, got "
            f"{class_weight!r}"
        )
    y = targets.numpy() if isinstance(targets, Tensor) else np.asarray(targets)
    if y.ndim != 1 or y.dtype.kind not in "iu" or (y.size and y.min() < 0):
        raise ValueError(
            "fit: class_weight needs class indices (integers >= 0) of shape (N,), got "
            f"{y.dtype} targets of shape {y.shape}; pass sample_weight for other targets"
        )
    size = max([int(y.max(initial=0)) + 1, *(int(k) + 1 for k in class_weight)])
    table = np.ones(size, dtype=np.float64)
    for k, w in class_weight.items():
        table[int(k)] = w
    return table[y]


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
