"""A NumPy scalar or array on the left of an operator defers to the tensor, as with PyTorch's
``__array_priority__``: ``np.float32(0.5) * loss`` gave a NumPy float32 (the graph silently
dropped: no ``backward``), ``np.ones(2) * w`` a NumPy array."""

from __future__ import annotations

import operator

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_a_numpy_scalar_on_the_left_gives_a_tensor_in_the_graph(spec: str, op) -> None:
    with entered(spec):
        w = tw.tensor([1.5, 2.0], requires_grad=True)
        out = op(np.float32(0.5), w)
    want = op(np.float32(0.5), torch.tensor([1.5, 2.0]))
    assert isinstance(out, tw.Tensor) and isinstance(want, torch.Tensor)
    assert out.dtype.name == str(want.dtype).removeprefix("torch.")
    np.testing.assert_allclose(out.detach().numpy(), want.numpy(), rtol=1e-6)
    out.sum().backward()
    assert w.grad is not None


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_a_numpy_array_on_the_left_does_not_become_a_numpy_result(spec: str) -> None:
    with entered(spec):
        w = tw.tensor([1.5, 2.0], requires_grad=True)
        try:
            out = np.ones(2) * w
        except TypeError:  # PyTorch's answer
            return
    assert isinstance(out, tw.Tensor)


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_a_numpy_array_compared_with_a_tensor_compares_elementwise_like_torch(spec: str) -> None:
    # With the priority, NumPy defers to the tensor, whose == once answered False for an
    # array (Python's identity fallback): labels.numpy() == c selected nothing.
    a = np.array([0, 1, 0])
    with entered(spec):
        c = tw.tensor(0)
        assert (a == c).tolist() == (c == a).tolist() == [True, False, True]
        assert (c * a).tolist() == (torch.tensor(0) * a).tolist()
    assert (a == torch.tensor(0)).tolist() == [True, False, True]
