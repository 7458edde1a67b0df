"""The NumPy backend's ``nll_loss`` and ``nll_loss_backward`` (API 2.8) against torch's
ATen kernels in float64 and float32: per-target values and unweighted gradients bit for bit,
reduced values to rounding (torch's cascaded sums against NumPy's pairwise ones); and the
node that ``nll_loss`` records without ``Function.apply`` (autograd.function.apply_fresh)
behaving as torch's: its name, version checks, a second backward.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

aten = torch.ops.aten
CODES = {"none": 0, "mean": 1, "sum": 2}
SPECS = ("numpy", "torch:cpu")


def _numpy_backend() -> Any:
    with entered("numpy"):
        return tw.zeros(1).backend


def _case(seed: int, dtype: str, ignore_index: int) -> tuple:
    g = np.random.default_rng(seed)
    x = g.standard_normal((37, 9)).astype(dtype)
    target = g.integers(0, 9, 37)
    target[::4] = ignore_index
    x[0, 0] = -np.inf  # an ignored target's -inf log-probability gives 0, not NaN
    target[0] = ignore_index
    weight = g.uniform(0.5, 2, 9).astype(dtype)
    return x, target, weight


@pytest.mark.parametrize("dtype", ("float64", "float32"))
@pytest.mark.parametrize("reduction", ("none", "mean", "sum"))
@pytest.mark.parametrize("weighted", (False, True))
@pytest.mark.parametrize("ignore_index", (-100, 3))
def test_numpy_kernels_like_aten(dtype: str, reduction: str, weighted: bool, ignore_index: int):
    backend = _numpy_backend()
    x, target, weight = _case(1, dtype, ignore_index)
    w = weight if weighted else None
    loss, total = backend.nll_loss(x, target, w, reduction, ignore_index)
    t_w = None if w is None else torch.from_numpy(w)
    want, want_total = aten.nll_loss_forward(
        torch.from_numpy(x), torch.from_numpy(target), t_w, CODES[reduction], ignore_index
    )
    assert loss.dtype == x.dtype and total.dtype == x.dtype and total.shape == ()
    tol = {"rtol": 1e-6 if dtype == "float32" else 1e-14, "atol": 0}
    if reduction == "none":
        np.testing.assert_array_equal(loss, want.numpy())
    else:
        np.testing.assert_allclose(loss, want.numpy(), **tol)
    np.testing.assert_allclose(total, want_total.numpy(), **tol)
    g = np.random.default_rng(2).standard_normal(loss.shape).astype(dtype)
    got = backend.nll_loss_backward(g, x, target, w, reduction, ignore_index, total)
    expected = aten.nll_loss_backward(
        torch.from_numpy(g),
        torch.from_numpy(x),
        torch.from_numpy(target),
        t_w,
        CODES[reduction],
        ignore_index,
        torch.from_numpy(np.asarray(total)),
    ).numpy()
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", ("float64", "float32"))
def test_numpy_kernel_nothing_kept_like_aten(dtype: str) -> None:
    backend = _numpy_backend()
    x = np.ones((3, 4), dtype)
    target = np.full(3, -100)
    for reduction in ("mean", "sum"):
        loss, total = backend.nll_loss(x, target, None, reduction, -100)
        want, want_total = aten.nll_loss_forward(
            torch.from_numpy(x), torch.from_numpy(target), None, CODES[reduction], -100
        )
        np.testing.assert_array_equal(loss, want.numpy())  # NaN for the mean, 0 for the sum
        np.testing.assert_array_equal(total, want_total.numpy())
        g = backend.nll_loss_backward(np.ones((), dtype), x, target, None, reduction, -100, total)
        np.testing.assert_array_equal(g, np.zeros_like(x))


@pytest.mark.parametrize("spec", SPECS)
def test_nll_loss_node_named_as_torch(spec: str) -> None:
    x, target, _ = _case(3, "float64", -100)
    with entered(spec):
        logp = tw.tensor(x, requires_grad=True)
        loss = tw.nn.functional.nll_loss(logp, tw.tensor(target))
        # (NumPy: the core's composition named another node before its kernel)
        assert type(loss.grad_fn).__name__ == "NllLossBackward0"


def _outcome(m: Any, x: np.ndarray, target: np.ndarray, act: str) -> Any:
    logp = m.tensor(x, requires_grad=True)
    loss = m.nn.functional.nll_loss(logp, m.tensor(target))
    try:
        if act == "change saved input":
            with m.no_grad():
                logp.mul_(2)
            loss.backward()
        elif act == "second backward":
            loss.backward()
            loss.backward()
        else:  # retained: the gradients of both passes add up
            loss.backward(retain_graph=True)
            loss.backward()
    except RuntimeError:
        return RuntimeError
    return np.asarray(logp.grad.tolist())


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("act", ("change saved input", "second backward", "retained"))
def test_nll_loss_node_checks_like_torch(spec: str, act: str) -> None:
    x, target, _ = _case(4, "float64", -100)
    x[0, 0] = 0.0
    theirs = _outcome(torch, x, target, act)
    with entered(spec):
        ours = _outcome(tw, x, target, act)
    if theirs is RuntimeError:
        assert ours is RuntimeError
    else:
        np.testing.assert_array_equal(ours, theirs)
