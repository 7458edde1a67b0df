"""Reductions' overloads as torch 2.13 tells them apart, ``out=`` of another dtype, the order
of the checks on complex inputs, and the creation functions' keywords, each compared with
torch (values, dtype and shape, or the class of the exception). Most cases failed before this
session (the comment in each test says how); the rest guard the forms beside them."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

RNG = np.random.default_rng(1717)
X = RNG.standard_normal((30, 70)) * 3 + 10  # float32 sums of these round visibly


def _summary(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_summary(v) for v in value)
    if not hasattr(value, "dtype"):
        return value
    host = value.numpy() if value.dtype in (torch.bool, tw.bool) else value.cdouble().numpy()
    return str(value.dtype).split(".")[-1], tuple(value.shape), host


def _outcome(m: Any, code: Callable[[Any], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _summary(code(m))
        except Exception as error:  # noqa: BLE001 - the class is what is compared
            return type(error).__name__


def _same(code: Callable[[Any], Any], tolerance: float = 0.0) -> None:
    want, got = _outcome(torch, code), _outcome(tw, code)
    _close(got, want, tolerance)


def _close(got: Any, want: Any, tolerance: float) -> None:
    if isinstance(want, tuple) and len(want) == 3 and isinstance(want[2], np.ndarray):
        assert isinstance(got, tuple) and got[:2] == want[:2]  # dtype and shape
        np.testing.assert_allclose(got[2], want[2], rtol=tolerance, atol=tolerance)
    elif isinstance(want, tuple) and isinstance(got, tuple) and len(got) == len(want):
        for g, w in zip(got, want):
            _close(g, w, tolerance)
    else:
        assert got == want  # an exception's class, or a shape


def _m(m: Any) -> Any:
    return m.tensor(X[:3, :4], dtype=m.float32)


# -- max/min: PyTorch's three overloads -------------------------------------------------------

MAX_MIN_FORMS = {
    "keepdim without dim": lambda m, op: getattr(_m(m), op)(keepdim=True),
    "keepdim=False without dim": lambda m, op: getattr(m, op)(_m(m), keepdim=False),
    "dim=None": lambda m, op: getattr(m, op)(_m(m), dim=None),
    "None, True": lambda m, op: getattr(m, op)(_m(m), None, True),
    "other=": lambda m, op: getattr(m, op)(_m(m), other=_m(m).flip(0)),
    "method other=": lambda m, op: getattr(_m(m), op)(other=_m(m).flip(1)),
    "input=, other=": lambda m, op: getattr(m, op)(input=_m(m), other=_m(m) * 0),
    "other= and dim": lambda m, op: getattr(m, op)(_m(m), dim=0, other=_m(m)),
    "tensor and keepdim": lambda m, op: getattr(m, op)(_m(m), _m(m), keepdim=True),
    "input=, dim, keepdim": lambda m, op: getattr(m, op)(input=_m(m), dim=1, keepdim=True),
    "whole": lambda m, op: getattr(m, op)(input=_m(m)),
    "other= out=": lambda m, op: getattr(m, op)(_m(m), other=_m(m), out=m.empty(0)),
}


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("form", list(MAX_MIN_FORMS))
def test_max_min_overloads(op: str, form: str) -> None:
    # keepdim without dim and dim=None were taken (torch: TypeError); other= was a TypeError
    _same(lambda m: MAX_MIN_FORMS[form](m, op))


# -- prod: one int dim --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.prod(_m(m), dim=(0, 1)),
        lambda m: m.prod(_m(m), (0,)),
        lambda m: _m(m).prod([1]),
        lambda m: _m(m).prod((0, 1), True),
        lambda m: m.prod(input=_m(m), dim=1, keepdim=True),
        lambda m: m.prod(_m(m), -1, dtype=m.float64),
    ],
)
def test_prod_takes_one_int_dim(call: Callable[[Any], Any]) -> None:
    # a tuple or list of dims was taken (torch: TypeError); input= was a TypeError
    _same(call, 1e-6)


# -- out= of another dtype: computed in it ------------------------------------------------------

WIDENING = {
    "mean": lambda m, x, out: m.mean(x, 1, out=out),
    "mean whole": lambda m, x, out: m.mean(x, out=out),
    "nansum": lambda m, x, out: m.nansum(x, 0, out=out),
    "nanmean": lambda m, x, out: m.nanmean(x, 1, True, out=out),
    "std": lambda m, x, out: m.std(x, 1, out=out),
    "var": lambda m, x, out: m.var(x, 0, correction=0, keepdim=True, out=out),
    "var whole": lambda m, x, out: m.var(x, out=out),  # torch: the input's precision
}


@pytest.mark.parametrize("name", list(WIDENING))
def test_out_of_wider_dtype_computes_in_it(name: str) -> None:
    # the float32 result was computed, then cast into the float64 out (off by ~1e-7)
    def call(m: Any) -> Any:
        out = m.empty(0, dtype=m.float64)
        assert WIDENING[name](m, m.tensor(X, dtype=m.float32), out) is out
        return out

    _same(call, 1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.nansum(_m(m), 0, out=m.empty(0, dtype=m.int64)),
        lambda m: m.nansum(_m(m), 0, out=m.empty(0, dtype=m.bool)),
        lambda m: m.nansum(_m(m), 0, out=m.empty(0, dtype=m.complex64)),
        lambda m: m.nanmean(_m(m), 0, out=m.empty(0, dtype=m.complex64)),
        lambda m: m.nansum(_m(m).long(), 0, out=m.empty(0, dtype=m.float32)),
        lambda m: m.var(_m(m), 0, out=m.empty(0, dtype=m.complex64)),
        lambda m: m.var(_m(m), out=m.empty(0, dtype=m.complex64)),
        lambda m: m.std(_m(m), 0, out=m.empty(0, dtype=m.int64)),
        lambda m: m.std(_m(m), 0, out=m.empty(0, dtype=m.float16)),
        lambda m: m.mean(_m(m), 0, out=m.empty(0, dtype=m.float16)),
        lambda m: m.mean(_m(m).cfloat(), 0, out=m.empty(0, dtype=m.float32)),
        lambda m: m.mean(_m(m).long(), 0, out=m.empty(0, dtype=m.float32)),
    ],
)
def test_out_dtype_kernels(call: Callable[[Any], Any]) -> None:
    # nansum's and var's kernels have floating forms only (torch: NotImplementedError for a
    # float input with an integer, bool or complex out; tw cast, or raised RuntimeError)
    _same(call, 2e-3)


# -- complex inputs: dims and emptiness are checked first ---------------------------------------


def _z(m: Any, *shape: int) -> Any:
    return m.ones(*shape, dtype=m.complex64)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.max(_z(m, 0, 3), 0),
        lambda m: m.max(_z(m, 0, 3), 1),
        lambda m: m.min(_z(m, 0, 3), 0),
        lambda m: m.amax(_z(m, 0, 3), 0),
        lambda m: m.amax(_z(m, 0, 3), 1),
        lambda m: m.amin(_z(m, 0, 3), -1, True),
        lambda m: m.amax(_z(m), 0),
        lambda m: m.argmax(_z(m, 2, 3)),
        lambda m: m.argmax(_z(m, 0, 3), 1),
        lambda m: m.argmin(_z(m), 0),
        lambda m: m.argmin(_z(m, 0, 3)),
        lambda m: m.aminmax(_z(m, 0, 3), dim=0),
    ],
)
def test_complex_checks_order(call: Callable[[Any], Any]) -> None:
    # the complex refusal (NotImplementedError) came first; torch: IndexError for an empty
    # dim, an empty result from amax over a non-empty one, RuntimeError from argmax
    _same(call)


# -- creation keywords -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.rand(size=(2, 3), generator=m.Generator().manual_seed(0)).shape,
        lambda m: m.randn(size=(2, 3)).shape,
        lambda m: m.rand(2, 3, layout=m.strided, pin_memory=False).shape,
        lambda m: m.eye(3, layout=m.strided),
        lambda m: m.tensor([1, 2], pin_memory=False),
        lambda m: m.zeros_like(input=_m(m), memory_format=m.preserve_format),
        lambda m: m.full_like(input=_m(m), fill_value=3),
        lambda m: m.empty_like(input=_m(m)).shape,
        lambda m: m.randint(5, (3,), layout=m.strided).shape,
        lambda m: m.randint_like(_m(m), 5, requires_grad=False).shape,
        lambda m: m.randperm(n=5, layout=m.strided, pin_memory=False).shape,
        lambda m: m.range(0, 3, out=m.empty(2, dtype=m.int64)),
        lambda m: m.range(0, 3, dtype=m.float32, out=m.empty(0, dtype=m.int64)),
        lambda m: m.from_numpy(ndarray=np.arange(3.0)),  # (no keywords: tw's took array=)
        lambda m: m.rand(2, layout=None, fill=1),
    ],
)
def test_creation_keywords(call: Callable[[Any], Any]) -> None:
    # each keyword was a TypeError (unexpected keyword argument)
    _same(call)


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.tensor([1, 2], dtype=float),
        lambda m: m.as_tensor([1, 2], dtype=complex),
        lambda m: m.zeros(2, dtype=float),
        lambda m: m.ones(2, dtype=bool),
        lambda m: m.full((2,), 3, dtype=float),
        lambda m: m.zeros_like(_m(m), dtype=int),
        lambda m: m.arange(3, dtype=float),
        lambda m: m.linspace(0, 1, 3, dtype=float),
        lambda m: m.eye(2, dtype=int),
        lambda m: str(m.rand(2, dtype=float).dtype).split(".")[-1],
        lambda m: str(m.randint(0, 3, (2,), dtype=float).dtype).split(".")[-1],
        lambda m: str(m.randperm(3, dtype=float).dtype).split(".")[-1],
        lambda m: _m(m).to(float),
        lambda m: _m(m).to(dtype=int),
        lambda m: _m(m).to("cpu", bool),
        lambda m: _m(m).sum(dtype=float),
        lambda m: m.cumsum(_m(m), 0, dtype=int),
        lambda m: m.zeros(2, dtype="float32"),
        lambda m: m.tensor([1], dtype=np.float32),
        lambda m: _m(m).to(dtype="float64"),
    ],
)
def test_python_types_as_dtypes(call: Callable[[Any], Any]) -> None:
    # PyTorch reads bool, int, float and complex as dtypes (float: float64); each was an
    # AttributeError, a TypeError or an unknown-backend error (to(float) took float as a
    # device); anything else is a TypeError
    _same(call, 1e-6)
