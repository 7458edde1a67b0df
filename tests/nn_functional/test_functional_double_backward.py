"""Second derivatives through the composites (fused on some backends) match torch's."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch
from functional_reference import assert_close, randn


@pytest.mark.parametrize("padding", [1, "same"])
def test_gradient_of_a_gradient_norm(backend: str, padding) -> None:
    x, w = randn(2, 3, 5, 5), randn(4, 3, 3, 3, seed=1)
    grads = []
    for lib in (tw, torch):
        F = lib.nn.functional
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = F.max_pool2d(F.gelu(F.conv2d(xt, wt, padding=padding)), 2)
        loss = F.log_softmax(y.flatten(1), 1).sum() + F.layer_norm(y, (2,)).pow(3).sum()
        (gx,) = lib.autograd.grad(loss, [xt], create_graph=True)
        (gx * gx).sum().backward()
        grads.append((xt.grad, wt.grad))
    for ours, theirs in zip(*grads):
        assert_close(ours, theirs, rtol=1e-8, atol=1e-10)
