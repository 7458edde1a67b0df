"""``embedding(sparse=True)`` and ``scale_grad_by_freq``: PyTorch's gradient values (sparse
ones stored dense), and its error for both at once."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

WEIGHT = np.random.default_rng(0).standard_normal((6, 3))
INDEX = [[0, 2, 2], [5, 2, 0]]


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
@pytest.mark.parametrize("sparse, scale", [(True, False), (False, True), (False, False)])
@pytest.mark.parametrize("padding_idx", [None, 5, 2])
def test_gradient_equals_torchs_dense_gradient(spec, sparse, scale, padding_idx) -> None:
    with tw.device(spec):
        ours = tw.tensor(WEIGHT, requires_grad=True)
        out = tw.nn.functional.embedding(
            tw.tensor(INDEX), ours, padding_idx, sparse=sparse, scale_grad_by_freq=scale
        )
        (out.pow(3) * tw.arange(3.0, dtype=tw.float64)).sum().backward()
    theirs = torch.tensor(WEIGHT, requires_grad=True)
    out = torch.nn.functional.embedding(
        torch.tensor(INDEX), theirs, padding_idx, sparse=sparse, scale_grad_by_freq=scale
    )
    (out.pow(3) * torch.arange(3.0, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.to_dense().numpy(), rtol=1e-14)


def test_sparse_with_scale_grad_by_freq_raises_like_torch() -> None:
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
        tw.nn.Embedding(4, 2, sparse=True, scale_grad_by_freq=True)(tw.tensor([1, 1]))
    layer = torch.nn.Embedding(4, 2, sparse=True, scale_grad_by_freq=True)
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
        layer(torch.tensor([1, 1])).sum().backward()


def test_sparse_embedding_trains_with_sparse_adam() -> None:
    layer = tw.nn.Embedding(5, 3, sparse=True)
    before = layer.weight.detach().clone()
    optimizer = tw.optim.SparseAdam(layer.parameters(), lr=0.1)
    layer(tw.tensor([1, 3])).sum().backward()
    optimizer.step()
    changed = (layer.weight != before).any(dim=1).tolist()
    assert changed == [False, True, False, True, False]
