"""nll_loss through the backend's own kernel (the optional ``nll_loss`` and
``nll_loss_backward`` primitives: torch:cpu) and cross_entropy's fused kernels called
directly, against torch 2.13: values and gradients bit for bit on torch:cpu (the same
kernels), close on NumPy (the core's composition); torch's error classes for targets out of
range; unbatched input, an empty batch, class weights, ignored targets, double backward.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.ops.fusion import reference_only
from tw_backends import entered

SPECS = ("numpy", "torch:cpu")
REDUCTIONS = ("mean", "sum", "none")


def _case(seed: int, n: int, classes: int, ignored: int | None = None) -> tuple:
    g = np.random.default_rng(seed)
    x = g.standard_normal((n, classes)).astype(np.float32)
    target = g.integers(0, classes, n)
    if ignored is not None and n:
        target[::3] = ignored
    return x, target


def _run(m: Any, fn: str, x: np.ndarray, target: np.ndarray, dtype: str, **kw: Any) -> tuple:
    """The loss and the input's gradient (a cotangent of ones) under ``m`` (torch or tw)."""
    xs = m.tensor(x, dtype=getattr(m, dtype), requires_grad=True)
    if fn == "nll_loss":
        logp = m.log_softmax(xs.detach(), -1).requires_grad_()
    else:
        logp = xs
    weight = kw.pop("weight", None)
    if weight is not None:
        kw["weight"] = m.tensor(weight, dtype=getattr(m, dtype))
    loss = getattr(m.nn.functional, fn)(logp, m.tensor(target), **kw)
    loss.backward(m.ones_like(loss))
    return np.asarray(loss.detach().tolist()), np.asarray(logp.grad.tolist())


def _compare(spec: str, fn: str, x: np.ndarray, target: np.ndarray, dtype: str, **kw: Any):
    theirs = _run(torch, fn, x, target, dtype, **dict(kw))
    with entered(spec):
        ours = _run(tw, fn, x, target, dtype, **dict(kw))
    for a, b in zip(ours, theirs):
        if spec == "torch:cpu":  # the same kernels: bit for bit
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=2e-6 if dtype == "float32" else 1e-13, atol=0)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", ((80, 1000), (256, 10)))
def test_nll_loss_like_torch(spec: str, reduction: str, shape: tuple) -> None:
    x, target = _case(1, *shape)
    _compare(spec, "nll_loss", x, target, "float32", reduction=reduction)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_weighted_and_ignored_like_torch(spec: str, reduction: str) -> None:
    x, target = _case(2, 30, 7, ignored=-100)
    weight = np.random.default_rng(3).uniform(0.5, 2, 7)
    for dtype in ("float32", "float64"):
        _compare(spec, "nll_loss", x, target, dtype, reduction=reduction, weight=weight)
        _compare(spec, "nll_loss", x, target, dtype, reduction=reduction)
        # an ignore_index that is a class
        _compare(spec, "nll_loss", x, target % 7, dtype, reduction=reduction, ignore_index=2)


@pytest.mark.parametrize("spec", SPECS)
def test_cross_entropy_like_torch(spec: str) -> None:
    x, target = _case(4, 256, 10)
    _compare(spec, "cross_entropy", x, target, "float32")
    x, target = _case(5, 20, 6, ignored=-100)
    _compare(spec, "cross_entropy", x, target, "float64")
    _compare(spec, "cross_entropy", x, target, "float64", reduction="sum")


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_unbatched_and_empty_batch_like_torch(spec: str, reduction: str) -> None:
    x, target = _case(6, 1, 5)
    _compare(spec, "nll_loss", x[0], target[0], "float64", reduction=reduction)
    _compare(spec, "cross_entropy", x[0], target[0], "float64", reduction=reduction)
    empty = np.zeros((0, 5), np.float32)
    for dtype in ("float32", "float64"):
        _compare(spec, "nll_loss", empty, np.zeros(0, np.int64), dtype, reduction=reduction)


def _raised(m: Any, x: np.ndarray, target: np.ndarray, **kw: Any) -> type:
    logp = m.tensor(x).log_softmax(1)
    try:
        m.nn.functional.nll_loss(logp, m.tensor(target), **kw)
    except Exception as e:  # noqa: BLE001 (the class is what the test compares)
        return type(e)
    return type(None)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("bad", (10, 11, -1, -100))
def test_targets_out_of_range_raise_like_torch(spec: str, bad: int) -> None:
    x, target = _case(7, 6, 10)
    target[4] = bad
    for kw in ({}, {"ignore_index": 3}, {"reduction": "none"}):
        theirs = _raised(torch, x, target, **kw)
        with entered(spec):
            assert _raised(tw, x, target, **kw) is theirs, (bad, kw)


def test_torch_runs_its_own_kernel_and_names_the_node_as_torch() -> None:
    x, target = _case(8, 8, 5)
    with entered("torch:cpu"):
        logp = tw.tensor(x, requires_grad=True).log_softmax(1)
        for reduction in REDUCTIONS:
            loss = tw.nn.functional.nll_loss(logp, tw.tensor(target), reduction=reduction)
            assert type(loss.grad_fn).__name__ == "NllLossBackward0", reduction
            assert loss._node.op == "nll_loss", reduction  # (the kernel's node)
        with reference_only():  # tw check's reference: the core's composition, named as torch
            loss = tw.nn.functional.nll_loss(logp, tw.tensor(target))
            assert type(loss.grad_fn).__name__ == "NllLossBackward0"
            assert loss._node.op != "nll_loss"


@pytest.mark.parametrize("spec", SPECS)
def test_float64_gradients_and_double_backward_like_torch(spec: str) -> None:
    x, target = _case(9, 6, 4, ignored=-100)
    weight = np.random.default_rng(10).uniform(0.5, 2, 4)
    g = np.random.default_rng(11).standard_normal(6)

    def second(m: Any) -> tuple:
        logp = m.tensor(x, dtype=m.float64, requires_grad=True)
        cot = m.tensor(g, requires_grad=True)
        loss = m.nn.functional.nll_loss(
            logp, m.tensor(target), weight=m.tensor(weight), reduction="none"
        )
        (first,) = m.autograd.grad(loss, logp, cot, create_graph=True)
        (first * m.tensor(x)).sum().backward()  # reaches the cotangent
        return np.asarray(first.tolist()), np.asarray(cot.grad.tolist())

    theirs = second(torch)
    with entered(spec):
        ours = second(tw)
        leaf = tw.tensor(x, dtype=tw.float64, requires_grad=True)
        assert tw.autograd.gradcheck(
            lambda v: tw.nn.functional.nll_loss(v, tw.tensor(target), weight=tw.tensor(weight)),
            (leaf,),
        )
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=0)
