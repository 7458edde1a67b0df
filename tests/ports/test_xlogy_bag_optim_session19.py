"""Divergences from torch 2.13 fixed in the nineteenth session, each compared with real torch:
xlogy/xlog1py's gradients on their poles, embedding_bag's last bag with include_last_offset
when the last offset is short of the input, and the optimizers' state['step']."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

INF, NAN = float("inf"), float("nan")
#: Zeros of both signs, the poles of log and log1p, NaN, inf and ordinary values.
CORNERS = [0.0, -0.0, 1.0, 2.5, -1.0, -0.5, NAN, INF]


def _host(t: Any) -> np.ndarray:
    return np.asarray(t.detach()).astype(np.float64)


def _same_values(ours: list, theirs: list) -> None:
    """Close values (float32's libm may round a log differently), NaN and inf where torch has
    them, and the sign of every zero."""
    for i, (a, b) in enumerate(zip(ours, theirs)):
        a, b = _host(a), b.detach().double().numpy()
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=0, err_msg=f"result {i}")
        zero = b == 0
        np.testing.assert_array_equal(np.signbit(a[zero]), np.signbit(b[zero]), f"sign {i}")


def _xlog_derivatives(m: Any, name: str, dtype: str) -> list:
    """Values, first and second derivatives of ``name`` over every pair of CORNERS."""
    f = m.xlogy if name == "xlogy" else m.special.xlog1py
    xs, ys = zip(*itertools.product(CORNERS, CORNERS))
    x = m.tensor(xs, dtype=getattr(m, dtype), requires_grad=True)
    y = m.tensor(ys, dtype=getattr(m, dtype), requires_grad=True)
    out = f(x, y)
    gx, gy = m.autograd.grad(out.sum(), [x, y], create_graph=True)
    second = m.autograd.grad((gx * 1.25 + gy * 0.75).sum(), [x, y])
    return [out, gx, gy, *second]


# before: at x = 0 on the pole (y = 0 for xlogy, -1 for xlog1py) the gradient of y was 0 (NaN
# in torch) and the second derivatives 0 (torch: inf/NaN); at (0, inf) the gradient of x was
# 0 (torch: inf); at x = 0, y < 0 the gradient of y was +0 (torch: -0.0)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["xlogy", "xlog1py"])
def test_xlogy_derivatives_at_the_corners(spec: str, name: str, dtype: str) -> None:
    theirs = _xlog_derivatives(torch, name, dtype)
    with entered(spec):
        ours = _xlog_derivatives(tw, name, dtype)
    _same_values(ours, theirs)


def _xlog_broadcast(m: Any) -> list:
    x = m.tensor([[0.0, 1.5, -1.0]], dtype=m.float64, requires_grad=True)
    y = m.tensor([[0.0], [2.0], [-1.0]], dtype=m.float64, requires_grad=True)
    out = m.xlogy(x, y) + m.xlogy(x, 3.0) + m.special.xlog1py(2.0, y)
    gx, gy = m.autograd.grad(out.sum(), [x, y], create_graph=True)
    return [out, gx, gy, *m.autograd.grad(gx.sum() + gy.sum(), [x, y])]


# broadcast operands and Python numbers on either side, with torch's node names
def test_xlogy_broadcast_and_numbers(spec: str) -> None:
    theirs = _xlog_broadcast(torch)
    with entered(spec):
        ours = _xlog_broadcast(tw)
        names = [
            type(f(*args).grad_fn).__name__
            for f, args in [
                (tw.xlogy, (tw.ones(2, requires_grad=True), tw.ones(2))),
                (tw.xlogy, (2.0, tw.ones(2, requires_grad=True))),
                (tw.special.xlog1py, (tw.ones(2, requires_grad=True), 2.0)),
            ]
        ]
    _same_values(ours, theirs)
    assert names == ["XlogyBackward0", "XlogyBackward1", "SpecialXlog1PyBackward2"]


def _bag(m: Any, offsets: list, mode: str, weighted: bool, padding_idx: int | None) -> list:
    rng = np.random.default_rng(3)
    weight = m.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    scale = m.tensor(rng.standard_normal(8), requires_grad=True) if weighted else None
    out = m.nn.functional.embedding_bag(
        m.tensor([1, 2, 4, 5, 4, 3, 2, 0]),
        weight,
        m.tensor(offsets),
        mode=mode,
        per_sample_weights=scale,
        include_last_offset=True,
        padding_idx=padding_idx,
    )
    (out * m.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    return [out, weight.grad] + ([scale.grad] if weighted else [])


# before: the last bag stopped at the last offset; torch's (float64 kernels, and every kernel
# with padding_idx or mode='max') runs to the end of the input: values and gradients
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize(
    ("mode", "weighted"), [("sum", False), ("sum", True), ("mean", False), ("max", False)]
)
@pytest.mark.parametrize("offsets", [[0, 3, 3, 6], [0, 2]])
def test_embedding_bag_last_bag_runs_to_the_end(
    spec: str, offsets: list, mode: str, weighted: bool, padding_idx: int | None
) -> None:
    theirs = _bag(torch, offsets, mode, weighted, padding_idx)
    with entered(spec):
        ours = _bag(tw, offsets, mode, weighted, padding_idx)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(_host(a), b.detach().numpy(), rtol=1e-12, err_msg=f"{i}")


#: Each optimizer with options that reach its state (momentum buffers, AMSGrad, centring).
OPTIMIZERS = {
    "Adam": {"amsgrad": True},
    "AdamW": {},
    "Adamax": {},
    "NAdam": {},
    "RAdam": {},
    "Adagrad": {},
    "Adadelta": {},
    "RMSprop": {"momentum": 0.5, "centered": True},
    "Rprop": {},
    "ASGD": {"t0": 2},
    "SGD": {"lr": 0.1, "momentum": 0.9},
}


def _draws() -> tuple:
    rng = np.random.default_rng(5)
    start = [rng.standard_normal((3, 4)), rng.standard_normal(4)]
    return start, [[rng.standard_normal(a.shape) for a in start] for _ in range(5)]


def _optimizer(m: Any, name: str, start: list) -> tuple:
    params = [m.nn.Parameter(m.tensor(a.copy())) for a in start]
    return params, getattr(m.optim, name)(params, **OPTIMIZERS[name])


def _steps(m: Any, params: list, opt: Any, grads: list) -> None:
    for step in grads:
        for p, g in zip(params, step):
            p.grad = m.tensor(g.copy())
        opt.step()


def _converted(obj: Any, m: Any) -> Any:
    """A state dict with every tensor made again by library ``m`` (same values and dtype)."""
    if isinstance(obj, dict):
        return {k: _converted(v, m) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_converted(v, m) for v in obj)
    if isinstance(obj, (torch.Tensor, tw.Tensor)):
        dtype = getattr(m, str(obj.dtype).rsplit(".")[-1])
        return m.tensor(np.asarray(obj.detach()).copy(), dtype=dtype)
    return obj


def _assert_params_close(ours: list, theirs: list) -> None:
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(_host(a), b.detach().numpy(), rtol=1e-14, atol=1e-15)


# before: NAdam's mu_product and ASGD's eta and mu were float64 (torch keeps them in float32
# tensors), so NAdam's parameters drifted 4e-11 and ASGD's 5e-10 from torch's in five steps
@pytest.mark.parametrize("name", ["NAdam", "ASGD"])
def test_float32_state_numbers_like_torch(spec: str, name: str) -> None:
    start, grads = _draws()
    theirs, opt = _optimizer(torch, name, start)
    _steps(torch, theirs, opt, grads)
    with entered(spec):
        ours, opt = _optimizer(tw, name, start)
        _steps(tw, ours, opt, grads)
        _assert_params_close(ours, theirs)


# torch's state dicts (step a 0-d float32 tensor) load into tw's optimizers and tw's into
# torch's, and the loaded one goes on as torch's does after loading its own state dict
# (which casts every state tensor but 'step' to the parameter's dtype: NAdam's mu_product
# and ASGD's eta and mu become float64 here)
@pytest.mark.parametrize("name", list(OPTIMIZERS))
@pytest.mark.parametrize("source", ["torch", "tw"])
def test_state_dict_round_trip_with_torch(spec: str, name: str, source: str) -> None:
    start, grads = _draws()
    with entered(spec):
        libs = (torch, tw) if source == "torch" else (tw, torch)
        loaded = []
        for first_lib, second_lib in (libs, (torch, torch)):
            first, first_opt = _optimizer(first_lib, name, start)
            second, second_opt = _optimizer(second_lib, name, start)
            _steps(first_lib, first, first_opt, grads[:2])
            with torch.no_grad(), tw.no_grad():
                for p, q in zip(second, first):
                    p.copy_(second_lib.tensor(np.asarray(q.detach()).copy()))
            second_opt.load_state_dict(_converted(first_opt.state_dict(), second_lib))
            _steps(second_lib, second, second_opt, grads[2:])
            loaded.append(second)
        ours, theirs = loaded if source == "torch" else loaded[::-1]
        _assert_params_close(ours, theirs)
