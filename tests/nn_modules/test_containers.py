"""Sequential, ModuleList and ModuleDict behave like their torch.nn namesakes."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import check_layer
from tensorweaver import nn


def test_sequential_forward_matches_torch(backend: str) -> None:
    ours = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3), nn.LogSoftmax(dim=-1))
    theirs = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3), torch.nn.LogSoftmax(dim=-1)
    )
    check_layer(ours, theirs, np.random.default_rng(0).standard_normal((5, 4)))


def test_sequential_indexing() -> None:
    a, b, c = nn.Linear(1, 1), nn.ReLU(), nn.Linear(1, 2)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and list(seq) == [a, b, c]
    assert seq[0] is a and seq[-1] is c
    head = seq[1:]
    assert isinstance(head, nn.Sequential) and list(head) == [b, c]
    assert list(head._modules) == ["1", "2"]  # slices keep the names, as in PyTorch
    with pytest.raises(IndexError, match="out of range"):
        seq[3]
    d = nn.Tanh()
    seq[1] = d
    assert seq[1] is d
    del seq[0]
    assert list(seq._modules) == ["0", "1"] and list(seq) == [d, c]
    seq.append(b).insert(0, a)
    assert list(seq) == [a, d, c, b]
    assert seq.pop(1) is d and list(seq) == [a, c, b]
    seq.extend([nn.Identity()])
    assert len(seq) == 4
    named = nn.Sequential(OrderedDict(first=a, second=b))
    assert list(named._modules) == ["first", "second"] and named.first is a
    with pytest.raises(AssertionError, match="Module"):  # PyTorch's class
        nn.Sequential(a).insert(0, "not a module")


def test_module_list() -> None:
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3
    assert [n for n, _ in layers.named_parameters()][:2] == ["0.weight", "0.bias"]
    first = layers[0]
    assert layers[-3] is first and isinstance(layers[1:], nn.ModuleList)
    layers.append(nn.ReLU())
    layers += [nn.Tanh()]
    layers.insert(1, nn.Sigmoid())
    assert [type(m).__name__ for m in layers] == [
        "Linear",
        "Sigmoid",
        "Linear",
        "Linear",
        "ReLU",
        "Tanh",
    ]
    del layers[1:3]
    assert list(layers._modules) == ["0", "1", "2", "3"]
    assert layers.pop(0) is first and len(layers) == 3
    layers[0] = nn.Identity()
    assert isinstance(layers[0], nn.Identity)
    combined = layers + nn.ModuleList([nn.ReLU()])
    assert len(combined) == 4 and len(layers) == 3
    with pytest.raises(IndexError):
        layers[5]
    with pytest.raises(TypeError, match="iterable of modules"):
        layers.extend(nn.ReLU())


def test_module_dict() -> None:
    heads = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    heads["c"] = nn.Tanh()
    heads.update([("d", nn.Sigmoid())])
    assert list(heads) == list(heads.keys()) == ["a", "b", "c", "d"]
    assert "a" in heads and len(heads) == 4
    assert isinstance(heads.pop("b"), nn.ReLU) and "b" not in heads
    del heads["c"]
    assert [k for k, _ in heads.items()] == ["a", "d"]
    assert [n for n, _ in heads.named_parameters()] == ["a.weight", "a.bias"]
    with pytest.raises(ValueError, match="length 3"):
        heads.update([("x", nn.ReLU(), 1)])
    heads.clear()
    assert len(heads) == 0


def test_containers_move_with_their_parent(backend: str) -> None:
    model = nn.Module()
    model.blocks = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
    model.heads = nn.ModuleDict({"out": nn.Linear(2, 1)})
    assert len(list(model.parameters())) == 6
    model.float()
    assert all(p.dtype is tw.float32 for p in model.parameters())
