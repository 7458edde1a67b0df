"""What the tests of tensorweaver.utils.data share: comparing results with torch.utils.data's."""

from __future__ import annotations

import numpy as np
import tensorweaver as tw
import torch


def as_numpy(value: object) -> object:
    """Tensors of either library as (dtype name, NumPy array); containers recursively, with
    their type's name."""
    if isinstance(value, torch.Tensor):
        return str(value.dtype).split(".")[1], value.numpy()
    if isinstance(value, tw.Tensor):
        return value.dtype.name, value.numpy()
    if isinstance(value, dict):
        return {k: as_numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [as_numpy(v) for v in value]
    return value


def assert_same(ours: object, ref: object) -> None:
    """``ours`` (TensorWeaver) holds what ``ref`` (torch) holds: same containers (types and
    keys), same tensor dtypes and values, same other leaves."""
    a, b = as_numpy(ours), as_numpy(ref)
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert type(ours) is type(ref), f"mapping {type(ours).__name__} != {type(ref).__name__}"
        assert list(a) == list(b)
        for key in a:
            assert_same(ours[key], ref[key])
    elif isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], np.ndarray):
        assert a[0] == b[0], f"dtype {a[0]} != {b[0]}"
        np.testing.assert_array_equal(a[1], b[1])
    elif isinstance(a, tuple):
        assert a[0] == b[0], f"container {a[0]} != {b[0]}"
        assert len(a[1]) == len(b[1])
        for x, y in zip(ours, ref):
            assert_same(x, y)
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype, (a, b)
        np.testing.assert_array_equal(a, b)
    else:
        assert type(a) is type(b) and a == b, (a, b)
