"""Regression tests for reviewed differences from torch 2.13 in vector norms of negative and
zero order, bool and sequential running products/sums, cumprod's gradient and logaddexp's
gradient: each compares with real torch on every backend (the ``backend`` fixture)."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from gradcheck import gradcheck

INF, NAN = math.inf, math.nan


def _close(ours: Any, theirs: Any, rtol: float = 1e-12, atol: float = 1e-12) -> None:
    if ours is None or theirs is None:
        assert ours is None and theirs is None, (ours, theirs)
        return
    np.testing.assert_allclose(
        np.asarray(ours.detach().tolist(), dtype=np.float64),
        theirs.detach().double().numpy(),
        rtol=rtol,
        atol=atol,
        equal_nan=True,
    )


def _value_and_grad(m: Any, fn: Callable, data: list, dtype: str = "float64") -> tuple:
    x = m.tensor(data, dtype=getattr(m, dtype), requires_grad=True)
    out = fn(m, x)
    out.sum().backward()
    return out, x.grad


def _like_torch(fn: Callable, data: list, dtype: str = "float64", **tol: float) -> None:
    ours, ours_grad = _value_and_grad(tw, fn, data, dtype)
    theirs, their_grad = _value_and_grad(torch, fn, data, dtype)
    _close(ours, theirs, **tol)
    _close(ours_grad, their_grad, **tol)


# -- a: negative orders ---------------------------------------------------------------------

NEGATIVE_ORDERS = [-1, -0.5, -2, -INF]
NORM_DATA = [[1.0, 0.0, 2.0], [1.0, 3.0, 2.0], [0.0, 0.0, 0.0], [[1.0, 0.0], [2.0, -3.0]]]
SPELLINGS = {
    "vector_norm": lambda m, x, o, **k: m.linalg.vector_norm(x, o, **k),
    "linalg.norm": lambda m, x, o, **k: m.linalg.norm(x, o, **k),
    "norm": lambda m, x, o, dim=None, keepdim=False: m.norm(x, o, dim, keepdim),
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("order", NEGATIVE_ORDERS)
def test_negative_order_norm_of_zeros_like_torch(backend: str, spelling: str, order: float):
    """||[1, 0, 2]||_-1 was 0.6667 (zeros skipped); PyTorch's is 0, gradient 0."""
    norm = SPELLINGS[spelling]
    for data in NORM_DATA:
        for dim, keepdim in [(None, False), (-1, False), (-1, True)]:
            if spelling == "linalg.norm" and dim is None and np.ndim(data) == 2:
                continue  # a matrix norm
            _like_torch(lambda m, x, d=dim, k=keepdim: norm(m, x, order, dim=d, keepdim=k), data)
            if np.ndim(data) == 2:
                _like_torch(lambda m, x, k=keepdim: norm(m, x, order, dim=0, keepdim=k), data)


@pytest.mark.parametrize("order", [-1, -0.5, -2])
def test_negative_order_norm_gradcheck(backend: str, order: float) -> None:
    gradcheck(lambda x: tw.linalg.vector_norm(x, order, dim=1), [[1.0, 2.5, -3.0], [0.5, 4, 2]])


@pytest.mark.parametrize("order", [-1, -INF, 0.5])
def test_negative_order_norm_of_empty_like_torch(backend: str, order: float) -> None:
    for shape, dim in [((0,), None), ((0, 3), 0), ((0, 3), 1), ((3, 0), 1), ((3, 0), 0)]:
        try:
            theirs = torch.linalg.vector_norm(torch.zeros(shape), order, dim)
        except RuntimeError as error:
            with pytest.raises(RuntimeError, match="does not have an identity"):
                tw.linalg.vector_norm(tw.zeros(shape), order, dim)
            assert "identity" in str(error)
            continue
        assert tuple(tw.linalg.vector_norm(tw.zeros(shape), order, dim).shape) == theirs.shape


# -- f: order 0 has no gradient -------------------------------------------------------------


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_zero_order_norm_leaves_grad_none_like_torch(backend: str, spelling: str) -> None:
    """vector_norm(x, 0).backward() left zeros in x.grad; PyTorch leaves it None."""
    for m in (tw, torch):
        x = m.tensor([1.0, 0.0, 2.0], requires_grad=True)
        out = SPELLINGS[spelling](m, x, 0)
        assert out.requires_grad and out.grad_fn.name() == "LinalgVectorNormBackward0"
        out.backward(retain_graph=True)
        assert x.grad is None
        (out * x.sum()).backward()  # the other path still reaches x
        assert x.grad.tolist() == [2.0, 2.0, 2.0]


# -- g: second derivative at an exact zero ----------------------------------------------------


@pytest.mark.parametrize("order", [2.5, 3])
def test_norm_second_derivative_at_zero_like_torch(backend: str, order: float) -> None:
    for data in ([0.0, 0.0, 2.0], [0.0, 0.0, 0.0], [1.0, -2.0, 0.5]):
        found = []
        for m in (tw, torch):
            x = m.tensor(data, dtype=m.float64, requires_grad=True)
            (g,) = m.autograd.grad(m.linalg.vector_norm(x, order), x, create_graph=True)
            (h,) = m.autograd.grad(g.sum(), x)
            found.append((g, h))
        _close(found[0][0], found[1][0])
        _close(found[0][1], found[1][1], atol=1e-9)


# -- b: bool running sums and products --------------------------------------------------------


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_bool_scan_dtype_refused_like_torch(backend: str, name: str) -> None:
    """cumsum/cumprod with dtype=bool gave a bool result; PyTorch has no such kernel."""
    cases = [([True, False, True], "bool"), ([1, 0, 2], "int64"), ([1.5, 2.0], "float32")]
    cases += [([True], "bool"), (True, "bool"), (2.5, "float32"), ([], "bool")]
    for data, dtype in cases:
        for dtype_arg in ("bool", None, "int64", "float32"):
            kw = {} if dtype_arg is None else {"dtype": dtype_arg}

            def run(m: Any, data: Any = data, dtype: str = dtype, kw: dict = kw) -> Any:
                x = m.tensor(data, dtype=getattr(m, dtype))
                extra = {k: getattr(m, v) for k, v in kw.items()}
                return getattr(m, name)(x, 0, **extra), getattr(x, name)(0, **extra)

            try:
                theirs = run(torch)
            except NotImplementedError:
                with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
                    run(tw)
                continue
            for ours, their in zip(run(tw), theirs):
                assert ours.dtype.name == str(their.dtype).removeprefix("torch."), (data, kw)
                assert ours.tolist() == their.tolist()


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_bool_scan_into_bool_out_refused_like_torch(backend: str, name: str) -> None:
    for m in (torch, tw):
        out = m.empty(3, dtype=m.bool)
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            getattr(m, name)(m.tensor([True, False, True]), 0, out=out)


def test_bool_running_extremes_unaffected(backend: str) -> None:
    for name in ("cummax", "cummin"):
        ours = getattr(tw, name)(tw.tensor([True, False, True]), 0)
        theirs = getattr(torch, name)(torch.tensor([True, False, True]), 0)
        assert ours.values.tolist() == theirs.values.tolist()
        assert ours.indices.tolist() == theirs.indices.tolist()


# -- c, d: cumprod's order of multiplication and its gradient -------------------------------

CUMPROD_DATA = [
    [1e308, 1e308, 0.0, 1.0],
    [1e308, 1e308, 1e-308, 0.0],
    [0.0, 1e308, 1e308],
    [1.0, INF, -INF, 2.0],
    [1.0, 0.0, 3.0, 4.0],
    [2.0, 0.0, 3.0, 0.0, 5.0],
    [0.0, 0.0, 1.0],
    [1.0, 2.0, 3.0, 0.0],
    [3.0, -INF, 0.0, 2.0],
    [INF, 2.0, 0.0],
    [1.0, NAN, 0.0],
    [0.0, INF, 1.0],
    [1e-200, 1e-200, 1e300, 1e300],
    [-2.0, 0.5, -3.0, 0.25],
]


@pytest.mark.parametrize("index", range(len(CUMPROD_DATA)))
def test_cumprod_sequential_values_and_grad_like_torch(backend: str, index: int) -> None:
    """[1e308, 1e308, 0, 1] gave [1e308, inf, 0, nan] (torch [.., inf, nan, nan]); the
    gradient of [1, inf, -inf, 2] was [-inf, -inf, inf, -inf] (torch [nan, nan, nan, -inf])."""
    _like_torch(lambda m, x: m.cumprod(x, 0), CUMPROD_DATA[index])
    _like_torch(lambda m, x: x.cumprod(-1), CUMPROD_DATA[index])


def test_cumprod_along_each_dim_with_zeros_like_torch(backend: str) -> None:
    rng = np.random.default_rng(3)
    data = rng.standard_normal((4, 5, 3))
    data[rng.random(data.shape) < 0.25] = 0.0
    data[1, 2, :] = [0.0, 0.0, 1.5]
    for dim in (0, 1, 2, -1):
        _like_torch(lambda m, x, d=dim: m.cumprod(x, d) * m.arange(3.0), data.tolist(), rtol=1e-10)
    _like_torch(lambda m, x: m.cumprod(x, 1), data.tolist(), dtype="float32", rtol=1e-5)


@pytest.mark.parametrize(
    "data", [[[1.5, -2.0, 0.5, 3.0]], [[1.5, 0.0, 0.5, 3.0]], [[0.0, 2.0, 0.0, 3.0]]]
)
def test_cumprod_gradcheck(backend: str, data: list) -> None:
    gradcheck(lambda x: tw.cumprod(x, 1), data)


@pytest.mark.parametrize("data", [[1.5, -2.0, 0.5, 3.0], [1.5, 0.0, 0.5, 3.0], [0.0, 2.0, 0.0]])
def test_cumprod_second_derivative_like_torch(backend: str, data: list) -> None:
    found = []
    for m in (tw, torch):
        x = m.tensor(data, dtype=m.float64, requires_grad=True)
        weights = m.tensor([1.0, -2.0, 0.5, 3.0][: len(data)], dtype=m.float64)
        (g,) = m.autograd.grad((m.cumprod(x, 0) * weights).sum(), x, create_graph=True)
        (h,) = m.autograd.grad((g * weights).sum(), x)
        found.append((g, h))
    _close(found[0][0], found[1][0])
    _close(found[0][1], found[1][1])


def test_cumprod_grad_fn_name_and_integer_and_half(backend: str) -> None:
    x = tw.tensor([1.0, 2.0], requires_grad=True)
    assert tw.cumprod(x, 0).grad_fn.name() == "CumprodBackward0"
    assert tw.cumprod(tw.tensor([2, 0, 3]), 0).tolist() == [2, 0, 0]
    half = [1.5, 60000.0, 0.0, 2.0]
    _like_torch(lambda m, x: m.cumprod(x, 0), half, dtype="float16", rtol=1e-3)


# -- e: logaddexp's gradient ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_logaddexp_gradient_and_name_like_torch(backend: str, name: str, dtype: str) -> None:
    """At (inf, inf) the gradient was 0.5 (torch NaN); grad_fn was AddBackward0."""
    found = []
    for m in (tw, torch):
        dt = getattr(m, dtype)
        a = m.tensor([[INF, -INF, 1.0, INF, 2.0]], dtype=dt, requires_grad=True)
        b = m.tensor([[INF], [-INF], [1.0]], dtype=dt, requires_grad=True)
        out = getattr(m, name)(a, b)
        assert out.grad_fn.name() == name.capitalize() + "Backward0"
        out.sum().backward()
        found.append((out, a.grad, b.grad))
    tol = 1e-3 if dtype == "float16" else 1e-6
    for ours, theirs in zip(*found):
        _close(ours, theirs, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_gradcheck_and_second_derivative(backend: str, name: str) -> None:
    gradcheck(lambda a, b: getattr(tw, name)(a, b), [0.5, -1.0, 3.0], [[1.5], [-2.0]])
    found = []
    for m in (tw, torch):
        x = m.tensor([0.5, -1.0], dtype=m.float64, requires_grad=True)
        y = m.tensor([1.5, 2.0], dtype=m.float64, requires_grad=True)
        g = m.autograd.grad(getattr(m, name)(x, y).sum(), (x, y), create_graph=True)
        found.append(m.autograd.grad(g[0].sum(), (x, y)))
    for ours, theirs in zip(*found):
        _close(ours, theirs)
