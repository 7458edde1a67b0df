"""A shape change that keeps the shape is a new view with its own node, as in PyTorch: a
gradient taken with respect to ``x.view_as(x)`` also counted x's other uses (1.0 where
PyTorch gives 0.5), since the "view" was x itself. ``flatten`` of a 1-d tensor is the tensor
itself in both."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

SAME_SHAPE = {
    "view_as": lambda x: x.view_as(x),
    "view": lambda x: x.view(2),
    "reshape": lambda x: x.reshape(2),
    "squeeze": lambda x: x.squeeze(),
    "unflatten": lambda x: x.unflatten(0, (2,)),
}


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
@pytest.mark.parametrize("name", SAME_SHAPE)
def test_gradient_with_respect_to_a_same_shape_view_like_torch(spec: str, name: str) -> None:
    results = []
    for lib in (tw, torch):
        with entered(spec) if lib is tw else torch.no_grad():
            x = lib.tensor([0.5, 2.0], requires_grad=True)
        y = SAME_SHAPE[name](x)
        assert y is not x
        (g,) = lib.autograd.grad((x * y * 3).sum(), y)
        results.append(g.tolist())
        with lib.no_grad():
            y.add_(1)  # still a view: the write reaches x
        assert x.tolist() == [1.5, 3.0]
    assert results[0] == results[1] == [1.5, 6.0]


def test_flatten_of_a_1d_tensor_is_the_tensor_itself_like_torch() -> None:
    x = tw.ones(3)
    assert x.flatten() is x and torch.ones(3).flatten().dim() == 1
