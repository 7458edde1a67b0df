"""Pools, instance norm and embedding bags on torch:cpu run torch's fused kernels (issue 15)
and agree, in float64, with PyTorch and with the NumPy backend's decomposition: outputs and
the gradients of every floating input, for every option."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as twF
import torch
import torch.nn.functional as torchF
from functional_reference import assert_close, check, host, randn
from tensorweaver_torch.backend import TorchBackend
from tw_backends import entered

X1, X2, X3 = randn(2, 3, 11), randn(2, 3, 9, 8, seed=1), randn(2, 2, 7, 6, 5, seed=2)
INDICES = np.array([1, 2, 4, 5, 4, 3, 2, 0, 2])
OFFSETS = np.array([0, 2, 2, 5])  # an empty bag, and a last bag running to the end
ROWS = np.array([[1, 1, 3], [1, 0, 4], [1, 1, 1], [5, 2, 2]])  # an all-padding bag (1)
W = randn(6, 3, seed=3)

MAX_POOL = [
    (lambda F, x: F.max_pool1d(x, 3, stride=2, padding=1, dilation=2, ceil_mode=True), X1),
    (lambda F, x: F.max_pool1d(x, 4), X1[0]),  # unbatched
    (lambda F, x: F.max_pool2d(x, (2, 3), stride=2, padding=(0, 1), ceil_mode=True), X2),
    (lambda F, x: F.max_pool2d(x, 3, stride=2, dilation=2), X2),
    (lambda F, x: F.max_pool3d(x, 2), X3),
    (
        lambda F, x: F.max_pool3d(
            x, (3, 2, 2), stride=2, padding=(1, 0, 1), dilation=(1, 2, 1), ceil_mode=True
        ),
        X3,
    ),
]
AVG_POOL = [
    (
        lambda F, x: F.avg_pool1d(
            x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False
        ),
        X1,
    ),  # fmt: skip
    (lambda F, x: F.avg_pool1d(x, 4, padding=2), X1[0]),
    (lambda F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), X2),
    (lambda F, x: F.avg_pool2d(x, (2, 3), divisor_override=5), X2),
    (
        lambda F, x: F.avg_pool2d(
            x, 3, 2, 1, ceil_mode=True, count_include_pad=False, divisor_override=3
        ),
        X2,
    ),  # fmt: skip
    (lambda F, x: F.avg_pool3d(x, 2, stride=(1, 2, 2), padding=1, count_include_pad=False), X3),
    (lambda F, x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, divisor_override=7), X3),
]
ADAPTIVE = [
    (lambda F, x: F.adaptive_avg_pool1d(x, 4), X1),
    (lambda F, x: F.adaptive_avg_pool2d(x, (4, None)), X2),
    (lambda F, x: F.adaptive_avg_pool2d(x, (5, 3)), X2[0]),  # unbatched
    (lambda F, x: F.adaptive_avg_pool3d(x, (3, 2, 4)), X3),
]
ADAPTIVE_MAX = [
    (lambda F, x: F.adaptive_max_pool1d(x, 4), X1),
    (lambda F, x: F.adaptive_max_pool2d(x, (4, None)), X2),
    (lambda F, x: F.adaptive_max_pool2d(x, (5, 3)), X2[0]),
    (lambda F, x: F.adaptive_max_pool3d(x, (3, 2, 4)), X3),
]
CHANNEL = (randn(3, seed=4) + 2, randn(3, seed=5))
INSTANCE_NORM = [
    (lambda F, x: F.instance_norm(x), X2),
    (lambda F, x, w, b: F.instance_norm(x, weight=w, bias=b), X2, *CHANNEL),
    (lambda F, x, w: F.instance_norm(x, weight=w, eps=1e-3), X2, CHANNEL[0]),
    (lambda F, x, b: F.instance_norm(x, bias=b), X1, CHANNEL[1]),
    (lambda F, x, w, b: F.instance_norm(x, weight=w[:2], bias=b[:2]), X3, *CHANNEL),
]
EMBEDDING_BAG = [
    *(
        (lambda F, i, w, o, m=mode, p=pad: F.embedding_bag(i, w, o, mode=m, padding_idx=p),
         INDICES, W, OFFSETS)
        for mode in ("sum", "mean", "max")
        for pad in (None, 2)
    ),
    *(
        (lambda F, i, w, m=mode: F.embedding_bag(i, w, mode=m, padding_idx=1), ROWS, W)
        for mode in ("sum", "mean", "max")
    ),
    (
        lambda F, i, w, o, s: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=s,
                                              padding_idx=4),
        INDICES, W, OFFSETS, randn(9, seed=6),
    ),
    (
        lambda F, i, w, s: F.embedding_bag(i, w, mode="sum", per_sample_weights=s),
        ROWS, W, randn(4, 3, seed=7),
    ),
    (
        lambda F, i, w, o: F.embedding_bag(i, w, o, mode="mean", include_last_offset=True),
        INDICES, W, np.array([0, 3, 3, 9]),
    ),
]  # fmt: skip

TABLES = {
    "max_pool": MAX_POOL,
    "avg_pool": AVG_POOL,
    "adaptive_avg_pool": ADAPTIVE,
    "adaptive_max_pool": ADAPTIVE_MAX,
    "instance_norm": INSTANCE_NORM,
    "embedding_bag": EMBEDDING_BAG,
}
CASES = [
    pytest.param(name, fn, tuple(arrays), id=f"{name}-{i}")
    for name, table in TABLES.items()
    for i, (fn, *arrays) in enumerate(table)
]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of the torch backend's calls of these fused kernels, by method name."""
    counted: dict[str, int] = {}

    def counting(name: str, method: Callable) -> Callable:
        def spy(self: Any, *args: Any) -> Any:
            counted[name] = counted.get(name, 0) + 1
            return method(self, *args)

        return spy

    for composite in TABLES:
        for name in (f"fused_{composite}", f"fused_{composite}_backward"):
            monkeypatch.setattr(TorchBackend, name, counting(name, getattr(TorchBackend, name)))
    return counted


def _outputs_and_grads(spec: str, fn: Callable, arrays: tuple) -> list[np.ndarray]:
    """``fn``'s output and the gradients of its floating inputs on ``spec``, on the host."""
    with entered(spec):
        leaves = [tw.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        out = fn(twF, *leaves)
        cotangent = np.random.default_rng(1).standard_normal(tuple(out.shape))
        (out * tw.tensor(cotangent)).sum().backward()
        return [host(out)] + [host(t.grad) for t in leaves if t.requires_grad]


@pytest.mark.parametrize(("name", "fn", "arrays"), CASES)
def test_fused_kernel_matches_torch_and_numpy(calls: dict, name: str, fn, arrays: tuple) -> None:
    with entered("torch:cpu"):
        check(fn, *arrays)
    assert calls == {f"fused_{name}": 1, f"fused_{name}_backward": 1}
    fused = _outputs_and_grads("torch:cpu", fn, arrays)
    decomposed = _outputs_and_grads("numpy", fn, arrays)
    assert calls[f"fused_{name}"] == 2  # NumPy has no such kernel: it decomposes
    for a, b in zip(fused, decomposed):
        assert_close(a, b)


def test_instance_norm_moves_running_stats_like_torch(calls: dict) -> None:
    mean, var = randn(3, seed=8), randn(3, seed=9) ** 2
    with entered("torch:cpu"):
        ours = tw.tensor(mean), tw.tensor(var)
        theirs = torch.tensor(mean), torch.tensor(var)
        x = tw.tensor(X2, requires_grad=True)
        out = twF.instance_norm(x, *ours, momentum=0.3)
        expected = torchF.instance_norm(torch.tensor(X2), *theirs, momentum=0.3)
        assert calls["fused_instance_norm"] == 1
        assert_close(out, expected)
        assert_close(ours[0], theirs[0])
        assert_close(ours[1], theirs[1])


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_indices_match_torch(calls: dict, nd: int) -> None:
    # Indices come from the decomposition: a composite yields one array of x's dtype.
    x = (X1, X2, X3)[nd - 1]
    pool = f"max_pool{nd}d"
    with entered("torch:cpu"):
        _, indices = check(
            lambda F, x: getattr(F, pool)(x, 3, stride=2, padding=1, ceil_mode=True,
                                          return_indices=True),
            x,
        )  # fmt: skip
    assert indices.dtype is tw.int64
    assert "fused_max_pool" not in calls


def test_scale_grad_by_freq_stays_decomposed(calls: dict) -> None:
    with entered("torch:cpu"):
        w = tw.tensor(W, requires_grad=True)
        twF.embedding_bag(tw.tensor(ROWS), w, mode="sum", scale_grad_by_freq=True).sum().backward()
    assert "fused_embedding_bag" not in calls


ERRORS = [
    (lambda F, x: F.max_pool2d(x, 2, padding=2), X2, "max_pool2d: .*padding"),
    (lambda F, x: F.avg_pool3d(x, 8), X3, "avg_pool3d: .*shorter than the window"),
    (lambda F, x: F.avg_pool2d(x, 2, divisor_override=0), X2, "avg_pool2d: divisor_override"),
    (lambda F, x: F.max_pool1d(x, 2, stride=0), X1, "max_pool1d: .*positive"),
    (lambda F, x: F.adaptive_avg_pool2d(x, (1, 2, 3)), X2, "adaptive_avg_pool2d: output_size"),
    (lambda F, x: F.adaptive_max_pool2d(x, (-1, 2)), X2, "adaptive_max_pool2d: output_size"),
    (
        lambda F, x: F.instance_norm(x, use_input_stats=False),
        X2,
        "instance_norm: running_mean and running_var",
    ),
    (lambda F, x: F.layer_norm(x, (9,)), X2, r"layer_norm: normalized_shape \(9,\)"),
    (lambda F, x: F.layer_norm(x, (8,), bias=x[0, 0, 0, :3]), X2, "layer_norm: bias"),
    (lambda F, x: F.group_norm(x, 2), X2, "group_norm: .*num_groups=2"),
    (lambda F, x: F.embedding(x.long(), x[0, 0, 0]), X2, "embedding: weight"),
    (
        lambda F, x: F.embedding_bag(
            x[0, 0, :2].long().abs(), x[0, 0], mode="sum", per_sample_weights=x[0, 0, :2].float()
        ),
        X2,
        "embedding_bag: per_sample_weights",
    ),
]


@pytest.mark.parametrize(("fn", "x", "match"), ERRORS)
def test_bad_arguments_raise_torchs_class(fn, x: np.ndarray, match: str) -> None:
    with pytest.raises(Exception) as theirs:
        fn(torchF, torch.tensor(x))
    with pytest.raises(theirs.type, match=match):
        fn(twF, tw.tensor(x))


def _bag_by_embedding(F, i, w, s):
    """embedding_bag(i, w, mode='sum', per_sample_weights=s) for a 2-D i, written with
    embedding (torch has no second derivative of embedding_bag)."""
    return (F.embedding(i, w) * s.unsqueeze(-1)).sum(1)


SECOND_ORDER = [
    pytest.param(expected or case[0], case[0], tuple(case[1:]), id=name)
    for name, case, expected in (
        ("max_pool", MAX_POOL[5], None),
        ("avg_pool", AVG_POOL[4], None),
        ("adaptive_avg_pool", ADAPTIVE[3], None),
        ("adaptive_max_pool", ADAPTIVE_MAX[1], None),
        ("instance_norm", INSTANCE_NORM[1], None),
        ("embedding_bag", EMBEDDING_BAG[10], _bag_by_embedding),
    )
]


@pytest.mark.parametrize(("expected", "fn", "arrays"), SECOND_ORDER)
def test_gradient_of_a_gradient_matches_torch(expected, fn, arrays: tuple) -> None:
    # create_graph differentiates the decomposition (composite.py): it must agree with the
    # fused first derivative and with torch's second.
    results = []
    for lib, F, f in ((tw, twF, fn), (torch, torchF, expected)):
        with entered("torch:cpu"):
            leaves = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
            floats = [t for t in leaves if t.requires_grad]
            out = f(F, *leaves)
            loss = (out * out.detach().sin()).sum() + out.pow(3).sum()
            grads = lib.autograd.grad(loss, floats, create_graph=True)
            sum((g * g).sum() for g in grads).backward()
            results.append([*grads, *(t.grad for t in floats)])
    for ours, theirs in zip(*results):
        assert_close(ours, theirs, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize(("dtype", "tol"), [("float16", 2e-3), ("bfloat16", 2e-2)])
def test_avg_pool3d_in_half_precision(calls: dict, dtype: str, tol: float) -> None:
    # torch's 3-d CPU kernel has no half precision: the plugin computes in float32.
    x, g = X3, randn(2, 2, 4, 4, 3, seed=10)
    with entered("torch:cpu"):
        ours = tw.tensor(x).to(getattr(tw, dtype)).requires_grad_()
        out = twF.avg_pool3d(ours, 3, 2, 1, ceil_mode=True)
        out.backward(tw.tensor(g).to(out.dtype))
    assert calls["fused_avg_pool"] == 1
    assert out.dtype is ours.grad.dtype is getattr(tw, dtype)
    theirs = torch.tensor(x, requires_grad=True)
    torchF.avg_pool3d(theirs, 3, 2, 1, ceil_mode=True).backward(torch.tensor(g))
    expected = torchF.avg_pool3d(torch.tensor(x), 3, 2, 1, ceil_mode=True)
    assert_close(out.double(), expected, rtol=tol, atol=tol)
    assert_close(ours.grad.double(), theirs.grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5), (1, 4, 2, 3, 2)])
def test_cross_entropy_on_maps_like_torch(shape: tuple) -> None:
    """(N, C, d1, ...) logits (a segmentation map; the backends' cross_entropy_nd kernels)
    give PyTorch's value, gradient and grad_fn, on numpy and torch:cpu."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape)
    target = rng.integers(0, shape[1], (shape[0], *shape[2:]))
    target.flat[::4] = -100
    xt = torch.tensor(x, requires_grad=True)
    loss_t = torch.nn.functional.cross_entropy(xt, torch.tensor(target))
    loss_t.backward()
    for device in ("numpy", "torch:cpu"):
        xw = tw.tensor(x, requires_grad=True, device=device)
        loss = tw.nn.functional.cross_entropy(xw, tw.tensor(target, device=device))
        assert type(loss.grad_fn).__name__ == type(loss_t.grad_fn).__name__
        loss.backward()
        np.testing.assert_allclose(loss.item(), loss_t.item(), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(xw.grad), xt.grad.numpy(), rtol=1e-10, atol=1e-15)
