"""default_collate and default_convert against torch.utils.data's on nested samples: the same
containers (types kept as PyTorch keeps them), tensor dtypes and values, and errors."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, namedtuple
from typing import Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from data_reference import assert_same
from tensorweaver.utils import data
from torch.utils import data as tdata

Pair = namedtuple("Pair", "left right")


class Tags(list):
    """A list subclass: collating keeps its type, as PyTorch does."""


def sample(i: int, tensor: Callable) -> dict:
    """One nested sample; ``tensor`` makes the library's tensor from a NumPy array."""
    rng = np.random.default_rng(i)
    extras = defaultdict(list)
    extras["score"] = np.float32(i / 3)
    return {
        "image": tensor(rng.standard_normal((2, 3)).astype(np.float32)),
        "array64": rng.standard_normal(4),
        "ints": rng.integers(-5, 5, 3).astype(np.int16),
        "bytes": rng.integers(0, 255, 2).astype(np.uint8),
        "mask": rng.random(3) > 0.5,
        "zero_d": np.array(i * 1.5),
        "np_scalars": (np.int64(i), np.bool_(i % 2), np.float64(i / 7)),
        "label": i,
        "weight": i / 4,
        "flag": bool(i % 3),
        "name": f"s{i}",
        "raw": b"x" * i,
        "pair": Pair(i, [i, (i + 1) / 2]),
        "nested": [{"a": i, "b": (np.arange(2) * i, f"t{i}")}],
        "ordered": OrderedDict(z=i, a=np.ones(2, dtype=np.float32) * i),
        "extras": extras,
        "tags": Tags([i, i + 1]),
    }


def test_default_collate_matches_torch_on_nested_samples() -> None:
    ours = data.default_collate([sample(i, tw.tensor) for i in range(5)])
    ref = tdata.default_collate([sample(i, torch.from_numpy) for i in range(5)])
    assert_same(ours, ref)
    assert type(ours["extras"]) is defaultdict and ours["extras"].default_factory is list
    assert type(ours["tags"]) is Tags
    assert type(ours["pair"]) is Pair


def test_default_collate_of_plain_leaves_matches_torch() -> None:
    for batch in ([1, 2, 3], [0.5, 1.0], [True, False], ["a", "b"], [(1, "x"), (2, "y")]):
        assert_same(data.default_collate(batch), tdata.default_collate(batch))
    arrays = [np.arange(6, dtype=np.int32).reshape(2, 3) + k for k in range(3)]
    assert_same(data.default_collate(arrays), tdata.default_collate(arrays))
    tensors = [tw.arange(3) * k for k in range(2)]
    assert_same(
        data.default_collate(tensors), tdata.default_collate([torch.arange(3) * 0, torch.arange(3)])
    )


def test_default_collate_errors_like_torch() -> None:
    cases = [
        ([[1, 2], [3]], RuntimeError),
        ([object(), object()], TypeError),
        ([np.array(["a"]), np.array(["b"])], TypeError),
        ([np.array([{}], dtype=object)] * 2, TypeError),
    ]
    for batch, error in cases:
        with pytest.raises(error):
            tdata.default_collate(batch)
        with pytest.raises(error, match="default_collate"):
            data.default_collate(batch)


def test_default_convert_matches_torch() -> None:
    def item(tensor: Callable) -> dict:
        return {
            "image": tensor(np.arange(6.0).reshape(2, 3)),
            "array": np.arange(4, dtype=np.int16),
            "scalar": np.float32(2.5),
            "strings": np.array(["kept", "as is"]),
            "number": 3,
            "text": "t",
            "pair": Pair(np.ones(2), "r"),
            "tuple": (np.zeros(1, dtype=np.uint8), 1.5),
            "list": [np.arange(2), [np.bool_(True)]],
            "ordered": OrderedDict(b=np.arange(3)),
        }

    ours, ref = data.default_convert(item(tw.tensor)), tdata.default_convert(item(torch.from_numpy))
    np.testing.assert_array_equal(ours.pop("strings"), ref.pop("strings"))
    assert_same(ours, ref)
    assert type(ours["ordered"]) is OrderedDict


def test_loader_without_batching_converts_each_sample_like_torch() -> None:
    items = [(np.arange(3) * i, i, f"n{i}") for i in range(4)]
    ours = list(data.DataLoader(items, batch_size=None))
    ref = list(tdata.DataLoader(items, batch_size=None))
    assert len(ours) == len(ref) == 4
    for a, b in zip(ours, ref):
        assert_same(a, b)
