"""Ops returning ``(values, indices)`` return PyTorch's per-op named tuple, printed alike."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

X = np.array([[3.0, 1.0, 2.0], [0.5, 0.5, -1.0]])

CALLS = {
    "max": lambda m, t: m.max(t, 1),
    "min": lambda m, t: t.min(dim=0, keepdim=True),
    "sort": lambda m, t: m.sort(t, descending=True),
    "topk": lambda m, t: t.topk(2),
    "kthvalue": lambda m, t: m.kthvalue(t, 2, 1),
    "median": lambda m, t: t.median(1),
    "nanmedian": lambda m, t: m.nanmedian(t, 0),
    "mode": lambda m, t: m.mode(t, 1),
    "cummax": lambda m, t: m.cummax(t, 1),
    "cummin": lambda m, t: t.cummin(0),
    "aminmax": lambda m, t: m.aminmax(t, dim=1),
}


@pytest.mark.parametrize("op", CALLS)
def test_named_tuple_type_fields_and_repr_like_torch(op: str) -> None:
    ours = CALLS[op](tw, tw.tensor(X))
    theirs = CALLS[op](torch, torch.tensor(X))
    assert type(ours).__name__ == type(theirs).__name__ == op
    assert isinstance(ours, getattr(tw.return_types, op)) and isinstance(ours, tuple)
    assert repr(ours) == repr(theirs).replace("torch.", "tensorweaver.")
    values, second = ours  # unpacks as PyTorch's
    assert values is ours[0] and second is ours[1]


def test_fields_by_name() -> None:
    out = tw.max(tw.tensor(X), 1)
    assert out.values.tolist() == [3.0, 0.5] and out.indices.tolist() == [0, 0]
    pair = tw.aminmax(tw.tensor(X))
    assert (pair.min.item(), pair.max.item()) == (-1.0, 3.0)
