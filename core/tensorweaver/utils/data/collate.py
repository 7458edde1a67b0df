"""Merging samples into batches, as ``torch.utils.data.default_collate``/``default_convert``."""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.tensor import Tensor


def _is_text_array(value: np.ndarray | np.generic) -> bool:
    """NumPy strings, bytes and objects: no tensor dtype holds them."""
    return value.dtype.kind in "SaUO"


def _rebuild(elem: Any, parts: Any, recurse: Callable[[Any], Any]) -> Any:
    """``elem``'s container type holding ``recurse(p)`` for each part (mapping items or
    sequence positions); the plain ``dict``/``list`` when that type cannot be rebuilt."""
    if isinstance(elem, Mapping):
        fields = {key: recurse(value) for key, value in parts.items()}
        if isinstance(elem, MutableMapping):
            clone = copy.copy(elem)  # keeps defaultdict's factory, OrderedDict's type
            clone.update(fields)
            return clone
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(recurse(p) for p in parts))
    items = [recurse(p) for p in parts]
    if isinstance(elem, tuple):
        return items  # as PyTorch: a tuple of fields becomes a list
    if isinstance(elem, MutableSequence):
        clone = copy.copy(elem)
        clone[:] = items
        return clone
    try:
        return type(elem)(items)
    except TypeError:
        return items


def default_collate(batch: Sequence[Any]) -> Any:
    """Merge a list of samples into a batch, as PyTorch's ``default_collate`` does.

    Tensors and NumPy arrays are stacked along a new dimension 0 (NumPy scalars make one
    tensor of their dtype); Python floats become a float64 tensor, ints an int64 tensor,
    bools a bool tensor; strings stay a list; mappings, named tuples and sequences are
    collated field by field, keeping their type (a tuple becomes a list, as in PyTorch).
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return tw.stack(list(batch), 0)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, (np.ndarray, np.generic)):
        if _is_text_array(elem):
            raise TypeError(
                f"default_collate: cannot make a tensor of NumPy dtype {elem.dtype}; "
                "pass a collate_fn that handles it"
            )
        if isinstance(elem, np.generic):
            return tw.as_tensor(np.array(batch))
        return tw.stack([tw.as_tensor(b) for b in batch], 0)
    if isinstance(elem, float):
        return tw.tensor(list(batch), dtype=tw.float64)
    if isinstance(elem, int):
        return tw.tensor(list(batch))
    if isinstance(elem, Mapping):
        return _rebuild(elem, {key: [d[key] for d in batch] for key in elem}, default_collate)
    if isinstance(elem, Sequence):
        sizes = {len(sample) for sample in batch}
        if len(sizes) != 1:
            raise RuntimeError(
                "default_collate: every sample's sequence needs the same length, got lengths "
                f"{sorted(sizes)}"
            )
        return _rebuild(elem, list(zip(*batch)), default_collate)  # tuples, as PyTorch passes
    raise TypeError(
        "default_collate: a batch holds tensors, NumPy arrays, numbers, strings, mappings or "
        f"sequences; found {type(elem).__name__}: pass a collate_fn that handles it"
    )


def default_convert(data: Any) -> Any:
    """One sample as PyTorch's ``default_convert`` leaves it (the collate function when
    automatic batching is off): NumPy arrays and scalars become tensors, containers are
    converted field by field (a tuple becomes a list), anything else is kept as it is."""
    if isinstance(data, (np.ndarray, np.generic)) and not _is_text_array(data):
        return tw.as_tensor(data)
    if isinstance(data, Mapping):
        return _rebuild(data, data, default_convert)
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, data, default_convert)
    return data
