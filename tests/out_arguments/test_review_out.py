"""Review of ``out=`` (ops/out_arguments.py): the wrapped ``tw.*`` functions pickle as
torch's do, and the functions torch gives ``out=`` that the first pass missed take it, with
torch's dtype rule and overlap check; every case compared with torch 2.13."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _outcome(lib, fn):
    """``fn(lib)``'s values (NumPy float64), or its exception class, and whether it warned."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got = fn(lib)
        except Exception as error:  # compared by class with torch's
            return type(error), bool(caught)
    flat = got if isinstance(got, (tuple, list)) else (got,)
    return [np.asarray(t.tolist(), dtype=np.float64) for t in flat], bool(caught)


def _like_torch(fn) -> None:
    expected, warned = _outcome(torch, fn)
    got, tw_warned = _outcome(tw, fn)
    if isinstance(expected, type):  # torch may warn of the resize before it raises
        assert got is expected
        return
    assert tw_warned == warned
    assert not isinstance(got, type), got
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["cat", "max", "sort", "gather", "stack", "svd", "lu"])
def test_wrapped_functions_pickle_as_themselves(name) -> None:
    fn = getattr(tw, name)
    assert pickle.loads(pickle.dumps(fn)) is fn
    assert fn.__name__ == name and fn.__module__ == "tensorweaver"


def _x(m):
    return m.tensor([[0.3, -1.2, 2.5], [1.0, 0.7, -0.4], [2.2, -0.9, 0.1]], dtype=m.float64)


_CASES = {
    "sum": lambda m, o: m.sum(_x(m), 0, out=o),
    "sum_keepdim": lambda m, o: m.sum(_x(m), 1, True, out=o),
    "prod": lambda m, o: m.prod(_x(m), 1, out=o),
    "where": lambda m, o: m.where(_x(m) > 0.5, _x(m), -_x(m), out=o),
    "matrix_power": lambda m, o: m.matrix_power(_x(m), 3, out=o),
    "hardshrink": lambda m, o: m.hardshrink(_x(m), 0.5, out=o),
    "threshold": lambda m, o: m.threshold(_x(m), 0.5, 9.0, out=o),
    "select_copy": lambda m, o: m.select_copy(_x(m), 1, 2, out=o),
    "slice_copy": lambda m, o: m.slice_copy(_x(m), 0, 1, 3, out=o),
    "view_as_real_copy": lambda m, o: m.view_as_real_copy(_x(m).to(m.complex128), out=o),
    "orgqr": lambda m, o: m.orgqr(_x(m), m.tensor([0.5, 1.2], dtype=m.float64), out=o),
    "median": lambda m, o: m.median(_x(m), 0, out=(o, m.empty(0, dtype=m.int64))),
    "nanmedian": lambda m, o: m.nanmedian(_x(m), 1, out=(o, m.empty(0, dtype=m.int64))),
    "slogdet": lambda m, o: m.slogdet(_x(m), out=(m.empty(0, dtype=m.float64), o)),
    "geqrf": lambda m, o: m.geqrf(_x(m), out=(o, m.empty(0, dtype=m.float64))),
    "geqrf_tau": lambda m, o: m.geqrf(_x(m), out=(m.empty(0, dtype=m.float64), o)),
    "ormqr": lambda m, o: m.ormqr(*m.geqrf(_x(m)), _x(m).T, out=o),
}


@pytest.mark.parametrize("size", [0, 7])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize("case", sorted(_CASES))
def test_out_of_functions_first_missed(case, dtype, size) -> None:
    """``out`` empty (quiet resize) or with elements (warned) of each dtype: torch's values
    or torch's error class."""
    _like_torch(lambda m: _CASES[case](m, m.ones(size, dtype=getattr(m, dtype))))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.nonzero(x, out=x),
        lambda m, x: m.median(x, 0, out=(x, m.empty(0, dtype=m.int64))),
    ],
    ids=["nonzero", "median"],
)
def test_out_that_is_the_input(call) -> None:
    """nonzero and median refuse an ``out`` that is their input, as torch's kernels do."""
    _like_torch(lambda m: call(m, m.tensor([[0, 1, 1], [2, 0, 3]], dtype=m.int64)))


def test_sum_out_requires_grad() -> None:
    _like_torch(lambda m: m.sum(_x(m), 0, out=m.zeros(3, dtype=m.float64, requires_grad=True)))
    _like_torch(lambda m: m.sum(_x(m).requires_grad_(), 0, out=m.zeros(3, dtype=m.float64)))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, o: m.sum(_x(m), 1, dtype=m.float64, out=o),
        lambda m, o: m.mean(_x(m), 1, dtype=m.float64, out=o),
        lambda m, o: m.nansum(_x(m), 1, dtype=m.float64, out=o),
        lambda m, o: m.cumsum(_x(m), 1, dtype=m.float64, out=o),
        lambda m, o: m.cumprod(_x(m), 1, dtype=m.float64, out=o),
        lambda m, o: m.log_softmax(_x(m), 1, dtype=m.float64, out=o),
    ],
    ids=["sum", "mean", "nansum", "cumsum", "cumprod", "log_softmax"],
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dtype_keyword_must_be_outs(call, dtype) -> None:
    """An explicit ``dtype=`` other than ``out``'s is an error, not a cast."""
    _like_torch(lambda m: call(m, m.empty(0, dtype=getattr(m, dtype))))


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.sum(_x(m), out=m.empty(0, dtype=m.float64)),
        lambda m: m.prod(_x(m), out=m.empty(0, dtype=m.float64)),
        lambda m: m.median(_x(m), out=m.empty(0, dtype=m.float64)),
        lambda m: m.nanmedian(_x(m), out=m.empty(0, dtype=m.float64)),
        lambda m: m.sum(_x(m), dim=None, out=m.empty(0, dtype=m.float64)),
        lambda m: m.nonzero(_x(m), as_tuple=True, out=m.empty(0, dtype=m.int64)),
    ],
    ids=["sum", "prod", "median", "nanmedian", "sum_dim_none", "nonzero_as_tuple"],
)
def test_forms_without_out(call) -> None:
    """The overloads torch has no ``out=`` for refuse it with torch's error class."""
    _like_torch(call)


_DTYPES = ["float16", "float32", "float64", "int32", "int64", "bool"]


def _shape_dtype(call):
    def run(m):
        got = call(m)
        return m.tensor([*got.shape, _DTYPES.index(str(got.dtype).rpartition(".")[2])])

    return run


@pytest.mark.parametrize("size", [0, 7])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_creation_out(dtype, size) -> None:
    """eye writes its values, the random functions their shape, in ``out``'s dtype (resized
    quietly), or raise torch's error class for a dtype they cannot make."""
    _like_torch(lambda m: m.eye(3, 2, out=m.ones(size, dtype=getattr(m, dtype))))
    for call in (
        lambda m: m.randperm(5, out=m.ones(size, dtype=getattr(m, dtype))),
        lambda m: m.rand(2, 3, out=m.ones(size, dtype=getattr(m, dtype))),
        lambda m: m.randint(0, 5, (2, 3), out=m.ones(size, dtype=getattr(m, dtype))),
    ):
        _like_torch(_shape_dtype(call))
    _like_torch(lambda m: m.eye(3, dtype=m.float64, out=m.ones(size, dtype=getattr(m, dtype))))


def test_out_view_resized_within_its_base() -> None:
    def call(m):
        base = m.zeros(3, 4)
        m.cat([m.ones(2), m.full((3,), 2.0)], out=base[1])
        return base

    _like_torch(call)
