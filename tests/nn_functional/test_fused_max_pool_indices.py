"""``max_pool*d(return_indices=True)`` on torch:cpu runs torch's kernel (the
``max_pool_with_indices`` composite): values, indices and gradients equal PyTorch's and the
NumPy backend's decomposition, ties included; the indices feed ``max_unpool*d`` as before."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as twF
import torch
from functional_reference import assert_close, check, host, randn
from tensorweaver_torch.backend import TorchBackend
from tw_backends import entered

X1, X2, X3 = randn(2, 3, 11), randn(2, 3, 9, 8, seed=1), randn(2, 2, 7, 6, 5, seed=2)
# Few distinct values: windows with tied maxima, where the first one in row-major order wins.
TIES = np.round(randn(2, 3, 9, 8, seed=3)).clip(-1, 1)

POOLS = [
    (lambda F, x: F.max_pool1d(x, 3, stride=2, padding=1, dilation=2, ceil_mode=True,
                               return_indices=True), X1),
    (lambda F, x: F.max_pool1d(x, 4, return_indices=True), X1[0]),  # unbatched
    (lambda F, x: F.max_pool2d(x, (2, 3), stride=2, padding=(0, 1), ceil_mode=True,
                               return_indices=True), X2),
    (lambda F, x: F.max_pool2d(x, 3, stride=1, padding=1, return_indices=True), TIES),
    (lambda F, x: F.max_pool2d(x, 3, stride=2, dilation=2, return_indices=True), X2[0]),
    (lambda F, x: F.max_pool3d(x, 2, return_indices=True), X3),
    (lambda F, x: F.max_pool3d(x, (3, 2, 2), stride=2, padding=(1, 0, 1), dilation=(1, 2, 1),
                               ceil_mode=True, return_indices=True), X3),
]  # fmt: skip


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of the torch backend's calls of the fused kernels, by method name."""
    counted: dict[str, int] = {}

    def counting(name: str, method: Callable) -> Callable:
        def spy(self: Any, *args: Any) -> Any:
            counted[name] = counted.get(name, 0) + 1
            return method(self, *args)

        return spy

    for name in ("fused_max_pool_with_indices", "fused_max_pool_with_indices_backward"):
        monkeypatch.setattr(TorchBackend, name, counting(name, getattr(TorchBackend, name)))
    return counted


def _run(spec: str, fn: Callable, x: np.ndarray) -> list[np.ndarray]:
    """Values, indices and the input's gradient on ``spec``, on the host."""
    with entered(spec):
        leaf = tw.tensor(x, requires_grad=True)
        out, indices = fn(twF, leaf)
        cotangent = np.random.default_rng(1).standard_normal(tuple(out.shape))
        (out * tw.tensor(cotangent)).sum().backward()
        return [host(out), host(indices), host(leaf.grad)]


@pytest.mark.parametrize(("fn", "x"), POOLS)
def test_fused_indices_match_torch_and_decomposition(calls: dict, fn: Callable, x: Any) -> None:
    with entered("torch:cpu"):
        _, indices = check(fn, x)
    assert indices.dtype is tw.int64 and not indices.requires_grad
    assert calls == {
        "fused_max_pool_with_indices": 1,
        "fused_max_pool_with_indices_backward": 1,
    }
    fused, decomposed = _run("torch:cpu", fn, x), _run("numpy", fn, x)
    for a, b in zip(fused, decomposed):
        assert_close(a, b)


def test_fused_indices_feed_max_unpool(calls: dict) -> None:
    with entered("torch:cpu"):
        x = tw.tensor(X2, requires_grad=True)
        out, indices = twF.max_pool2d(x, 2, return_indices=True)
        restored = twF.max_unpool2d(out, indices, 2, output_size=x.shape[-2:])
        restored.sum().backward()
    assert calls["fused_max_pool_with_indices"] == 1
    t = torch.tensor(X2, requires_grad=True)
    t_out, t_indices = torch.nn.functional.max_pool2d(t, 2, return_indices=True)
    want = torch.nn.functional.max_unpool2d(t_out, t_indices, 2, output_size=t.shape[-2:])
    want.sum().backward()
    assert_close(restored, want)
    assert_close(x.grad, t.grad)


def test_integer_input_decomposes(calls: dict) -> None:
    with entered("torch:cpu"):
        x = tw.tensor(np.arange(2 * 3 * 6 * 6).reshape(2, 3, 6, 6) % 7)
        out, indices = twF.max_pool2d(x, 2, return_indices=True)
    assert not calls  # torch's CPU pools have no integer kernels: the decomposition runs
    assert out.dtype is tw.int64 and indices.dtype is tw.int64


def test_create_graph_differentiates_the_decomposition() -> None:
    with entered("torch:cpu"):
        x = tw.tensor(X2, requires_grad=True)
        out, _ = twF.max_pool2d(x, 2, return_indices=True)
        (g,) = tw.autograd.grad((out**3).sum(), x, create_graph=True)
        (gg,) = tw.autograd.grad(g.sum(), x)
    t = torch.tensor(X2, requires_grad=True)
    t_out, _ = torch.nn.functional.max_pool2d(t, 2, return_indices=True)
    (t_g,) = torch.autograd.grad((t_out**3).sum(), t, create_graph=True)
    (t_gg,) = torch.autograd.grad(t_g.sum(), t)
    assert_close(g, t_g)
    assert_close(gg, t_gg)
