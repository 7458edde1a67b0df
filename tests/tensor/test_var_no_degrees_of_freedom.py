"""Gradients of var/std (and var_mean/std_mean) where ``correction`` is at least the count
reduced, against torch 2.13: the value is inf or NaN, and torch's gradient follows its own
formula there (inf over the whole tensor, NaN where an element equals the mean; over ``dim``
``2 / (n - correction) * grad * (x - mean)``: inf/NaN at n == correction, finite beyond).
Ours was NaN everywhere (the composite's 0 * inf). The values of the gradients, inf and NaN
included, must be torch's."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch

DATA = {
    "one": [1.5],
    "two": [1.0, 3.0],
    "two equal": [2.0, 2.0],
    "rows": [[1.0, 4.0], [2.0, 2.0]],
    "three": [1.0, 2.0, 4.0],
    "cube": np.arange(12.0).reshape(2, 3, 2).tolist(),
}

CALLS = {
    "var": lambda m, x, kw: x.var(**kw),
    "std": lambda m, x, kw: x.std(**kw),
    "var_mean": lambda m, x, kw: m.var_mean(x, **kw)[0] * 2 + m.var_mean(x, **kw)[1],
    "std_mean": lambda m, x, kw: m.std_mean(x, **kw)[0] * 2 + m.std_mean(x, **kw)[1],
}

DIMS = {"none": {}, "0": {"dim": 0}, "-1 keepdim": {"dim": -1, "keepdim": True}}


def gradient(m: Any, call: str, data: list, kw: dict, dtype: str) -> tuple:
    x = m.tensor(data, dtype=getattr(m, dtype), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's and ours: degrees of freedom <= 0
        out = CALLS[call](m, x, kw)
    out.sum().backward()
    return np.asarray(out.detach().tolist()), np.asarray(x.grad.tolist())


def counted(data: str, dims: str) -> int:
    shape = np.shape(DATA[data])
    return int(np.prod(shape)) if "dim" not in DIMS[dims] else shape[DIMS[dims]["dim"]]


#: Every (data, correction, dims) whose correction leaves no degree of freedom (keepdim on
#: the tensors of more than one dimension).
CASES = [
    (data, correction, dims)
    for data in DATA
    for correction in (1, 2, 3, 1.5)
    for dims in DIMS
    if counted(data, dims) <= correction and (dims != "-1 keepdim" or np.ndim(DATA[data]) > 1)
]


@pytest.mark.parametrize(("data", "correction", "dims"), CASES)
@pytest.mark.parametrize(
    ("call", "dtype"),
    [("var", "float64"), ("std", "float64"), ("var_mean", "float64"), ("std_mean", "float64"),
     ("std", "float32")],
)  # fmt: skip
def test_gradient_without_degrees_of_freedom_like_torch(
    backend: str, call: str, dtype: str, data: str, correction: float, dims: str
) -> None:
    kw = {**DIMS[dims], "correction": correction}
    ours = gradient(tw, call, DATA[data], kw, dtype)
    theirs = gradient(torch, call, DATA[data], kw, dtype)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isinf(a) * np.sign(a), np.isinf(b) * np.sign(b))
        finite = np.isfinite(b)
        np.testing.assert_allclose(a[finite], b[finite], rtol=1e-6 if dtype == "float32" else 1e-12)


def test_one_value_var_gradient_is_torchs(backend: str) -> None:
    """The case that was NaN: var of one element over dim with correction 2 is -0.0 in torch
    (2 / (1 - 2) * grad * 0), and over dim with correction 2 on [1, 3] inf/-inf."""
    for data, kw in (
        ([1.5], {"dim": 0, "correction": 2}),
        ([1.0, 3.0], {"dim": 0, "correction": 2}),
    ):
        ours = gradient(tw, "var", data, kw, "float64")[1]
        theirs = gradient(torch, "var", data, kw, "float64")[1]
        np.testing.assert_array_equal(ours, theirs)


def test_double_backward_without_degrees_of_freedom_like_torch(backend: str) -> None:
    results = []
    for m in (tw, torch):
        x = m.tensor([1.0, 2.0, 4.0], dtype=m.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (g,) = m.autograd.grad(x.var(dim=0, correction=4), x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), x)
        results.append((np.asarray(g.tolist()), np.asarray(gg.tolist())))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_grad_fn_name_stays_var_backward(backend: str) -> None:
    x = tw.tensor([1.0], dtype=tw.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = x.var()
    assert type(out.grad_fn).__name__ == "VarBackward0"
