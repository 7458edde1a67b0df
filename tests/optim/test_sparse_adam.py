"""SparseAdam against ``torch.optim.SparseAdam`` fed by ``nn.Embedding(sparse=True)``, in
float64 from the same weights: TensorWeaver's sparse embedding gradients are stored dense, and
the rows they leave at zero must keep their values and moments, as PyTorch's sparse rows do.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import optim
from tensorweaver.nn.functional.sparse import SparseGradient

torch = pytest.importorskip("torch")

ROWS, DIM = 8, 3
#: The rows looked up at each step; rows 6 and 7 never are, rows repeat within a step.
LOOKUPS = [[0, 2, 2, 5], [1, 2], [0, 3, 3, 3, 4], [5], [2, 4, 0, 1]]


def _embeddings(seed: int = 0) -> tuple[Any, Any]:
    weights = np.random.default_rng(seed).standard_normal((ROWS, DIM))
    ours = tw.nn.Embedding.from_pretrained(tw.tensor(weights), freeze=False, sparse=True)
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(weights), freeze=False, sparse=True)
    return ours, theirs


def _backward(step: int, m: Any, embedding: Any) -> None:
    index = LOOKUPS[step]
    scale = np.random.default_rng(10 + step).standard_normal((len(index), DIM))
    (embedding(m.tensor(index)) * m.tensor(scale)).sum().backward()


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"lr": 0.05, "betas": (0.6, 0.9), "eps": 1e-6, "maximize": True}],
    ids=["defaults", "options"],
)
def test_trajectory_matches_torch_with_a_sparse_embedding(backend: str, kwargs: dict) -> None:
    ours, theirs = _embeddings()
    start = ours.weight.detach().numpy().copy()
    opt = optim.SparseAdam(ours.parameters(), **kwargs)
    ref = torch.optim.SparseAdam(list(theirs.parameters()), **kwargs)
    for step in range(len(LOOKUPS)):
        opt.zero_grad()
        ref.zero_grad()
        _backward(step, tw, ours)
        _backward(step, torch, theirs)
        assert theirs.weight.grad.is_sparse
        opt.step()
        ref.step()
        np.testing.assert_allclose(
            ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-13, atol=1e-15
        )
    state, expected = opt.state[ours.weight], ref.state[theirs.weight]
    assert state["step"] == float(expected["step"]) == len(LOOKUPS)
    for key in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_allclose(
            state[key].numpy(), expected[key].numpy(), rtol=1e-13, atol=1e-15, err_msg=key
        )
    untouched = ours.weight.detach().numpy()[6:]
    np.testing.assert_array_equal(untouched, start[6:])
    assert not state["exp_avg"][6:].numpy().any()


def test_a_vector_steps_only_its_nonzero_elements(backend: str) -> None:
    p = tw.tensor([1.0, 2.0, 3.0], dtype=tw.float64, requires_grad=True)
    opt = optim.SparseAdam([p], lr=0.1)
    dense = tw.tensor([0.5, 0.0, -2.0], dtype=tw.float64)
    p.grad = SparseGradient(dense.native, dense.backend, dense.dtype)  # (as sparse=True's)
    opt.step()
    # The first step of Adam moves each stepped element by lr against its gradient's sign.
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 2.0, 3.1], rtol=1e-7)


@pytest.mark.parametrize(
    "kwargs",
    [{"lr": 0.0}, {"lr": -1.0}, {"eps": 0.0}, {"betas": (1.0, 0.9)}, {"betas": (0.9, 1.0)}],
)
def test_bad_options_raise_like_torch(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        torch.optim.SparseAdam([torch.ones(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError, match="SparseAdam"):
        optim.SparseAdam([tw.ones(2, requires_grad=True)], **kwargs)


def test_signature_and_defaults_match_torch() -> None:
    ours = inspect.signature(optim.SparseAdam)
    theirs = inspect.signature(torch.optim.SparseAdam)
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
        (p.name, p.kind, p.default) for p in theirs.parameters.values()
    ]
    p, ref_p = tw.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    assert optim.SparseAdam([p]).defaults == torch.optim.SparseAdam([ref_p]).defaults
