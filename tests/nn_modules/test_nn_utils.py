"""tw.nn.utils: gradient clipping and parameter/vector conversion against torch.nn.utils."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import assert_close, host
from tensorweaver import nn

rng = np.random.default_rng(0)


def _grads_pair(scale: float) -> tuple[list[nn.Parameter], list[torch.nn.Parameter]]:
    """Parameters on both sides with the same gradients (one parameter without a gradient)."""
    ours, theirs = [], []
    for shape in [(3, 4), (5,), (2, 2, 2)]:
        grad = rng.standard_normal(shape) * scale
        p, q = (
            nn.Parameter(tw.zeros(*shape)),
            torch.nn.Parameter(torch.zeros(shape, dtype=torch.float64)),
        )
        p.grad, q.grad = tw.tensor(grad), torch.tensor(grad)
        ours.append(p)
        theirs.append(q)
    ours.append(nn.Parameter(tw.zeros(2)))
    theirs.append(torch.nn.Parameter(torch.zeros(2, dtype=torch.float64)))
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, "inf"])
@pytest.mark.parametrize("scale", [0.01, 10.0])  # below and above max_norm
def test_clip_grad_norm(backend: str, norm_type: object, scale: float) -> None:
    ours, theirs = _grads_pair(scale)
    total = nn.utils.clip_grad_norm_(ours, max_norm=1.5, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm=1.5, norm_type=norm_type)
    assert_close(total, expected)
    for p, q in zip(ours, theirs):
        assert (p.grad is None) == (q.grad is None)
        if q.grad is not None:
            assert_close(p.grad, q.grad)


def test_clip_grad_norm_edge_cases(backend: str) -> None:
    assert float(nn.utils.clip_grad_norm_([nn.Parameter(tw.zeros(2))], 1.0)) == 0.0
    p = nn.Parameter(tw.zeros(2))
    p.grad = tw.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, "inf"])
def test_total_norm_then_clip_in_two_steps_like_torch(backend: str, norm_type: object) -> None:
    ours, theirs = _grads_pair(10.0)
    total = nn.utils.get_total_norm([p.grad for p in ours if p.grad is not None], norm_type)
    expected = torch.nn.utils.get_total_norm(
        [q.grad for q in theirs if q.grad is not None], norm_type
    )
    assert_close(total, expected)
    nn.utils.clip_grads_with_norm_(ours, 1.5, total)
    torch.nn.utils.clip_grads_with_norm_(theirs, 1.5, expected)
    for p, q in zip(ours, theirs):
        if q.grad is not None:
            assert_close(p.grad, q.grad)


def test_clip_grad_value(backend: str) -> None:
    ours, theirs = _grads_pair(1.0)
    nn.utils.clip_grad_value_(ours, 0.5)
    torch.nn.utils.clip_grad_value_(theirs, 0.5)
    for p, q in zip(ours, theirs):
        if q.grad is not None:
            assert_close(p.grad, q.grad)


def test_parameters_vector_round_trip(backend: str) -> None:
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vec = nn.utils.parameters_to_vector(model.parameters())
    np.testing.assert_array_equal(
        host(vec), np.concatenate([host(p).ravel() for p in model.parameters()])
    )
    vec.sum().backward()  # differentiable
    assert_close(model[0].weight.grad, np.ones((2, 3)))
    weight = model[0].weight
    nn.utils.vector_to_parameters(tw.arange(11, dtype=tw.float64), model.parameters())
    assert model[0].weight is weight
    np.testing.assert_array_equal(host(weight), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(host(model[1].bias), [10.0])
    with pytest.raises(RuntimeError, match="invalid for input of size 3"):
        nn.utils.vector_to_parameters(tw.zeros(3), model.parameters())
