"""grid_sample's gradients where PyTorch counts a position as outside: positions exactly on
the border pixel centres get a zero grid gradient under border and reflection padding (a
plain clamp would pass it through), and nearest mode gives the grid a zero gradient, not
None. Compared with torch on the same float64 inputs (finite differences cannot decide at a
kink)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch


def on_borders(align_corners: bool, size: int = 4) -> np.ndarray:
    """(1, 2, 4, 2) positions on the centres of the edge pixels of a size x size input, and
    a few inside."""
    edge = 1.0 if align_corners else (size - 1) / size  # exact in binary for size 4
    xs = np.array([[-edge, edge, 0.3, -edge], [edge, -0.2, 0.11, edge]])
    ys = np.array([[0.4, -edge, edge, -edge], [edge, edge, -0.7, 0.25]])
    return np.stack([xs, ys], -1)[None]


def sampled_grads(m, x: np.ndarray, g: np.ndarray, **options) -> tuple:
    xt = m.tensor(x, requires_grad=True)
    gt = m.tensor(g, requires_grad=True)
    y = m.nn.functional.grid_sample(xt, gt, **options)
    weights = np.arange(y.numel(), dtype=np.float64).reshape(tuple(y.shape)) / 7.0 - 1.0
    (y * m.tensor(weights)).sum().backward()
    return y.detach().numpy(), xt.grad.numpy(), None if gt.grad is None else gt.grad.numpy()


@pytest.mark.parametrize("padding_mode", ["border", "reflection", "zeros"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_positions_on_the_border_like_torch(
    backend: str, padding_mode: str, align_corners: bool
) -> None:
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4))
    g = on_borders(align_corners)
    options = dict(mode="bilinear", padding_mode=padding_mode, align_corners=align_corners)
    ours, theirs = sampled_grads(tw, x, g, **options), sampled_grads(torch, x, g, **options)
    for name, a, b in zip(("output", "input grad", "grid grad"), ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_nearest_gives_the_grid_a_zero_gradient(backend: str, padding_mode: str) -> None:
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 5))
    g = np.random.default_rng(2).uniform(-1.3, 1.3, (1, 3, 2, 2))
    options = dict(mode="nearest", padding_mode=padding_mode, align_corners=False)
    *ours, grid_grad = sampled_grads(tw, x, g, **options)
    *theirs, torch_grid_grad = sampled_grads(torch, x, g, **options)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert grid_grad is not None, "the grid got no gradient; PyTorch gives zeros"
    np.testing.assert_array_equal(grid_grad, torch_grid_grad)
