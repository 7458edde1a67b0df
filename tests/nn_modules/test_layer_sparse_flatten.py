"""Embedding, Flatten and Unflatten against torch.nn (float64)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import assert_close, check_layer, host
from tensorweaver import nn

rng = np.random.default_rng(0)


def test_embedding(backend: str) -> None:
    index = rng.integers(0, 7, size=(3, 4))
    check_layer(nn.Embedding(7, 5), torch.nn.Embedding(7, 5), index)


def test_embedding_padding_idx(backend: str) -> None:
    layer = nn.Embedding(6, 3, padding_idx=-2)
    assert layer.padding_idx == 4
    np.testing.assert_array_equal(host(layer.weight[4]), np.zeros(3))
    index = np.array([[4, 1, 4], [0, 4, 2]])
    check_layer(layer, torch.nn.Embedding(6, 3, padding_idx=4), index)
    np.testing.assert_array_equal(host(layer.weight.grad[4]), np.zeros(3))
    assert repr(layer) == repr(torch.nn.Embedding(6, 3, padding_idx=4))


def test_embedding_from_pretrained(backend: str) -> None:
    table = tw.randn(4, 2)
    frozen = nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad
    assert_close(frozen(tw.tensor([3, 0])), host(table)[[3, 0]])
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad
    with pytest.raises(ValueError, match="2-D"):
        nn.Embedding.from_pretrained(tw.randn(4))


def test_embedding_rejects_out_of_range_padding_idx() -> None:
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(3, 2, padding_idx=3)


@pytest.mark.parametrize(("start", "end"), [(1, -1), (0, 1), (2, 3)])
def test_flatten(backend: str, start: int, end: int) -> None:
    check_layer(
        nn.Flatten(start, end), torch.nn.Flatten(start, end), rng.standard_normal((2, 3, 4, 5))
    )


def test_unflatten(backend: str) -> None:
    x = rng.standard_normal((2, 12, 3))
    check_layer(nn.Unflatten(1, (3, -1)), torch.nn.Unflatten(1, (3, -1)), x)
    assert repr(nn.Unflatten(1, (3, 4))) == repr(torch.nn.Unflatten(1, (3, 4)))
    assert repr(nn.Flatten()) == repr(torch.nn.Flatten())
    with pytest.raises(TypeError, match="unflattened_size"):
        nn.Unflatten(1, 12)
