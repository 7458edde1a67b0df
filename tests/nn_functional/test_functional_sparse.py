"""embedding and one_hot against torch.nn.functional."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from functional_reference import assert_close, check, host, randn

rng = np.random.default_rng(0)


@pytest.mark.parametrize("index_shape", [(5,), (3, 4), ()])
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding(backend: str, index_shape: tuple, padding_idx) -> None:
    indices = rng.integers(0, 6, size=index_shape)
    if index_shape:
        indices.flat[0] = 2
        indices.flat[-1] = 5  # both padding rows appear
    check(
        lambda F, i, w: F.embedding(i, w, padding_idx=padding_idx),
        indices,
        randn(6, 3),
    )


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalizes_weight_in_place(backend: str, norm_type: float) -> None:
    weight = randn(6, 4, scale=2)
    indices = np.array([[0, 2, 2], [5, 1, 0]])
    ours = tw.tensor(weight, requires_grad=True)
    theirs = torch.tensor(weight, requires_grad=True)
    out = tw.nn.functional.embedding(tw.tensor(indices), ours, max_norm=1.5, norm_type=norm_type)
    expected = torch.nn.functional.embedding(
        torch.tensor(indices), theirs, max_norm=1.5, norm_type=norm_type
    )
    assert_close(out, expected)
    assert_close(ours, theirs)  # the rows used were scaled down, the others kept
    assert not np.allclose(host(ours), weight)


def test_embedding_rejects_out_of_range_index(backend: str) -> None:
    # IndexError, as PyTorch's; tests/tensor/test_index_checks.py compares more cases.
    with pytest.raises(IndexError, match=r"embedding.*index 4 .*dimension 0 with size 4"):
        tw.nn.functional.embedding(tw.tensor([1, 4]), tw.ones(4, 2))


@pytest.mark.parametrize("num_classes", [-1, 7])
@pytest.mark.parametrize("shape", [(5,), (2, 3)])
def test_one_hot(backend: str, num_classes: int, shape: tuple) -> None:
    check(lambda F, t: F.one_hot(t, num_classes), rng.integers(0, 5, size=shape))


def test_one_hot_rejects_index_out_of_range(backend: str) -> None:
    # RuntimeError, as PyTorch's; tests/tensor/test_index_checks.py compares more cases.
    with pytest.raises(RuntimeError, match=r"one_hot: .*smaller than num_classes \(3\), got 3"):
        tw.nn.functional.one_hot(tw.tensor([0, 3]), 3)
