"""Reductions: values against NumPy float64 and gradients by finite differences over every
kind of ``dim`` (None, negative, tuples), ``keepdim``, 0-d, empty and non-contiguous inputs;
PyTorch's semantics for ``max``/``min`` with indices, ties, ``var`` corrections and empty
inputs.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes
from tensor_reference import (
    HYPOTHESIS,
    assert_values,
    grads_like_torch,
    like_torch,
    raises_like_torch,
    signed,
    uniform,
)

#: Reductions whose whole-tensor form takes no ``keepdim`` (PyTorch: TypeError) but whose
#: ``dim=None`` is taken; and prod, which takes neither (its whole form is ``prod()`` alone).
WHOLE_WITHOUT_KEEPDIM = ("sum", "mean")


def reduce_with(method, **fixed):
    """``t.method(dim=..., keepdim=..., **fixed)`` in a form PyTorch takes when ``dim`` is None:
    keepdim without dim (amax, var, norm...), ``dim=None`` (sum, mean), or for prod the whole
    form with its kept dimensions restored by a reshape."""

    def call(t, dim, keepdim):
        if method == "prod" and isinstance(dim, tuple):  # torch's prod takes one int dim
            for d in sorted((d % t.ndim for d in dim), reverse=True):
                t = t.prod(dim=d, keepdim=keepdim, **fixed)
            return t
        if dim is not None:
            return getattr(t, method)(dim=dim, keepdim=keepdim, **fixed)
        if method in WHOLE_WITHOUT_KEEPDIM or "unbiased" in fixed:  # (var's overloads)
            return getattr(t, method)(dim=None, keepdim=keepdim, **fixed)
        if method == "prod":
            out = t.prod(**fixed)
            return out.reshape((1,) * t.ndim) if keepdim else out
        return getattr(t, method)(keepdim=keepdim, **fixed)

    return call


def numpy_logsumexp(x, axis, keepdims):
    return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))


def numpy_norm(p):
    def norm(x, axis, keepdims):
        return np.sum(np.abs(x) ** p, axis=axis, keepdims=keepdims) ** (1 / p)

    return norm


def numpy_var(ddof, root=False):
    def var(x, axis, keepdims):
        result = np.var(x, axis=axis, keepdims=keepdims, ddof=ddof)
        return np.sqrt(result) if root else result

    return var


# name: (call(t, dim, keepdim), NumPy reference(x, axis, keepdims))
REDUCTIONS = {
    "sum": (reduce_with("sum"), np.sum),
    "mean": (reduce_with("mean"), np.mean),
    "prod": (reduce_with("prod"), np.prod),
    "amax": (reduce_with("amax"), np.amax),
    "amin": (reduce_with("amin"), np.amin),
    "logsumexp": (reduce_with("logsumexp"), numpy_logsumexp),
    "var": (reduce_with("var"), numpy_var(1)),
    "var-correction-0": (reduce_with("var", correction=0), numpy_var(0)),
    "var-unbiased-false": (reduce_with("var", unbiased=False), numpy_var(0)),
    "std": (reduce_with("std"), numpy_var(1, root=True)),
    "std-correction-2": (reduce_with("std", correction=2), numpy_var(2, root=True)),
    "norm": (reduce_with("norm"), numpy_norm(2)),
    "norm-p1": (reduce_with("norm", p=1), numpy_norm(1)),
}
#: Reductions without an identity cannot reduce a zero-size dimension.
NO_IDENTITY = ("amax", "amin")
#: PyTorch's logsumexp needs a dim.
NEEDS_DIM = ("logsumexp",)

# layout: (host shape, view, dims)
INPUTS = {
    "matrix": ((3, 4), lambda x: x, [None, 0, -1, (0, 1)]),
    "3d": ((2, 3, 4), lambda x: x, [None, 1, -1, (0, 2), (-1, 0)]),
    "scalar": ((), lambda x: x, [None, 0, -1]),
    "empty": ((0, 3), lambda x: x, [None, 0, 1]),
    "transposed": ((4, 3), lambda x: x.mT, [None, 0, -1]),
    "strided": ((3, 8), lambda x: x[:, 1::2], [None, 1]),
}
CUNUMERIC_CASES = {("sum", "3d"), ("mean", "matrix"), ("amax", "3d"), ("var", "matrix")}


def axis_of(shape, dim):
    """NumPy's ``axis`` for PyTorch's ``dim`` (on a 0-d input, dim 0 or -1 reduces nothing)."""
    return None if dim is None or not shape else tuple(np.atleast_1d(dim).tolist())


def reduces_zero_size(shape, dim):
    dims = range(len(shape)) if dim is None or not shape else np.atleast_1d(dim)
    return any(shape[d] == 0 for d in dims)


def reduction_params():
    for op in REDUCTIONS:
        for layout, (shape, _, dims) in INPUTS.items():
            for dim in dims:
                if dim is None and op in NEEDS_DIM:
                    continue
                if op in NO_IDENTITY and reduces_zero_size(shape, dim):
                    continue
                marks = pytest.mark.cunumeric if (op, layout) in CUNUMERIC_CASES else ()
                yield pytest.param(op, layout, dim, marks=marks, id=f"{op}-{layout}-dim={dim}")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy: mean of empty, ddof >= n
@pytest.mark.parametrize("keepdim", [False, True], ids=["", "keepdim"])
@pytest.mark.parametrize("op, layout, dim", list(reduction_params()))
def test_reduction_values(backend, op, layout, dim, keepdim):
    call, reference = REDUCTIONS[op]
    shape, view, _ = INPUTS[layout]
    x = signed(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch-style warnings: var with too few elements
        result = call(view(tw.tensor(x)), dim, keepdim)
    expected = reference(view(x), axis=axis_of(shape, dim), keepdims=keepdim)
    assert_values(result, expected, dtype="float64")


@pytest.mark.parametrize("op, layout, dim", list(reduction_params()))
def test_reduction_gradients(backend, op, layout, dim):
    call, reference = REDUCTIONS[op]
    shape, view, _ = INPUTS[layout]
    x = signed(shape, seed=2)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not np.all(np.isfinite(reference(view(x), axis=axis_of(shape, dim), keepdims=False))):
            pytest.skip("no finite derivative here (var of too few elements)")
        gradcheck(lambda t: call(view(t), dim, False), x)


EMPTY_REDUCTIONS = {
    "sum": lambda m, t: t.sum(),
    "prod": lambda m, t: t.prod(dim=0),
    "mean": lambda m, t: t.mean(dim=0),
    "logsumexp": lambda m, t: t.logsumexp(dim=0),
    "norm": lambda m, t: t.norm(),
    "amax": lambda m, t: t.amax(dim=1),
    "max": lambda m, t: t.max(dim=1),
    "argmax": lambda m, t: t.argmax(dim=1),
    "cumsum": lambda m, t: t.cumsum(dim=0),
    "all": lambda m, t: t.all(),
    "any": lambda m, t: t.any(dim=0),
    "count_nonzero": lambda m, t: t.count_nonzero(),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("op", EMPTY_REDUCTIONS.keys())
def test_reduction_over_empty_inputs_like_torch(backend, op):
    # Sums of nothing are 0, products 1, means NaN, logsumexp -inf.
    like_torch(EMPTY_REDUCTIONS[op], np.zeros((0, 3)))


@pytest.mark.parametrize(
    "call",
    [lambda m, t: t.amax(dim=0), lambda m, t: t.max(), lambda m, t: t.argmin()],
    ids=["amax", "max", "argmin"],
)
def test_reductions_without_identity_reject_empty_like_torch(backend, call):
    raises_like_torch(call, np.zeros((0, 3)), match=[r"\b0\b|empty|zero|numel"])


TIES = np.array([[1.0, 3.0, 3.0, -2.0], [2.0, 2.0, 1.0, 2.0], [-1.0, -1.0, -1.0, -1.0]])


@pytest.mark.cunumeric
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_with_dim_give_values_and_first_indices(backend, op, dim, keepdim):
    like_torch(lambda m, t: getattr(t, op)(dim=dim, keepdim=keepdim), TIES)
    like_torch(lambda m, t: getattr(m, op)(t, dim), TIES)
    result = getattr(tw.tensor(TIES), op)(dim, keepdim)
    values, indices = result
    assert values is result.values and indices is result.indices and result[0] is values
    expected = getattr(np, f"arg{op}")(TIES, axis=dim, keepdims=keepdim)
    assert_values(indices, expected, dtype="int64")


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_of_all_elements_and_of_0d(backend, op):
    like_torch(lambda m, t: getattr(t, op)(), TIES)
    like_torch(lambda m, t: getattr(m, op)(t), TIES)
    like_torch(lambda m, t: getattr(t, op)(dim=0), np.array(2.5))


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_with_dim_gradients(backend, op):
    x = uniform((3, 4), seed=4)
    gradcheck(lambda t: getattr(t, op)(dim=1).values, x)
    gradcheck(lambda t: getattr(t, op)(dim=0, keepdim=True)[0], x)
    gradcheck(lambda t: getattr(t, op)(), x)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, t: t.max(),
        lambda m, t: t.min(),
        lambda m, t: t.max(dim=1).values,
        lambda m, t: t.amax(dim=1),
        lambda m, t: t.amin(dim=(0, 1)),
        lambda m, t: m.amax(t, dim=0, keepdim=True),
    ],
    ids=["max", "min", "max-dim", "amax", "amin-all", "amax-keepdim"],
)
def test_gradients_on_ties_like_torch(backend, call):
    # max() and amax/amin share the gradient among tied elements; max(dim) gives it to
    # the index it returns.
    grads_like_torch(call, TIES)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(backend, op, dim, keepdim):
    # Ties give the first index; without dim, the index into the flattened tensor.
    like_torch(lambda m, t: getattr(m, op)(t, dim=dim, keepdim=keepdim), TIES)
    if dim is not None:
        expected = getattr(np, op)(TIES, axis=dim, keepdims=keepdim)
        assert_values(getattr(tw.tensor(TIES), op)(dim, keepdim), expected, dtype="int64")
    else:
        assert_values(getattr(tw.tensor(TIES), op)(), getattr(np, op)(TIES), dtype="int64")


NAN_ROWS = np.array([[1.0, np.nan, 3.0], [2.0, 0.0, -1.0]])


@pytest.mark.parametrize(
    "call",
    [
        lambda m, t: t.amax(dim=1),
        lambda m, t: t.max(dim=1),
        lambda m, t: t.min(),
        lambda m, t: t.argmax(dim=1),
        lambda m, t: t.sum(dim=1),
        lambda m, t: t.logsumexp(dim=1),
    ],
    ids=["amax", "max-dim", "min", "argmax", "sum", "logsumexp"],
)
def test_nan_propagates_like_torch(backend, call):
    like_torch(call, NAN_ROWS)


def test_logsumexp_is_stable(backend):
    x = np.array([[1000.0, 1000.0, -1000.0], [-np.inf, -np.inf, -np.inf], [-1e4, -1e4, 0.0]])
    expected = [1000.0 + np.log(2.0), -np.inf, 0.0]
    assert_values(tw.tensor(x).logsumexp(dim=1), expected)
    like_torch(lambda m, t: m.logsumexp(t, dim=-1, keepdim=True), x)
    like_torch(lambda m, t: t.logsumexp(dim=1), x.astype(np.float32))
    gradcheck(lambda t: t.logsumexp(dim=1), x[[0, 2]])


def test_var_of_one_element_is_nan_like_torch(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        like_torch(lambda m, t: t.var(), np.array([2.0]))
        like_torch(lambda m, t: t.std(dim=1), np.array([[2.0], [3.0]]))
        like_torch(lambda m, t: t.var(dim=0, correction=0), np.array([2.0]))


@pytest.mark.cunumeric
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_cumsum(backend, dim):
    x = uniform((2, 3, 4), seed=5)
    assert_values(tw.tensor(x).cumsum(dim=dim), np.cumsum(x, axis=dim))
    assert_values(tw.cumsum(tw.tensor(x).mT, dim), np.cumsum(x.mT, axis=dim))
    gradcheck(lambda t: t.cumsum(dim), x)
    like_torch(lambda m, t: t.cumsum(dim=dim), (x * 4).astype(np.int32))


def test_cumsum_of_0d_and_empty(backend):
    like_torch(lambda m, t: t.cumsum(dim=0), np.array(1.5))
    like_torch(lambda m, t: t.cumsum(dim=-1), np.zeros((2, 0)))
    gradcheck(lambda t: t.cumsum(0), np.array(1.5))


LOGICAL = np.array([[0.0, 1.0, -2.0], [0.5, 3.0, 1.0], [0.0, 0.0, 0.0]])


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None, 0, -1])
@pytest.mark.parametrize("dtype", ["float64", "bool", "int64"])
@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any(backend, op, dtype, dim, keepdim):
    x = LOGICAL.astype(dtype)
    dims = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    t = getattr(tw.tensor(x), op)(**dims)
    axis = {} if dim is None else {"axis": dim, "keepdims": keepdim}
    assert_values(t, getattr(np, op)(x, **axis), dtype="bool")
    like_torch(lambda m, t: getattr(t, op)(**dims), x)


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 1)])
def test_count_nonzero(backend, dim):
    expected = np.count_nonzero(LOGICAL, axis=dim)
    dims = {} if dim is None else {"dim": dim}
    assert_values(tw.tensor(LOGICAL).count_nonzero(**dims), expected, dtype="int64")
    like_torch(lambda m, t: m.count_nonzero(t, **dims), LOGICAL)


def test_norm_gradient_of_a_vector(backend):
    x = uniform((5,), seed=6)
    assert_values(tw.tensor(x).norm(), np.linalg.norm(x))
    gradcheck(lambda t: t.norm(), x)
    gradcheck(lambda t: tw.norm(t, p=2, dim=0), x)


def test_integer_sums_do_not_overflow_small_dtypes(backend):
    x = np.full((300,), 100, dtype=np.int8)
    t = like_torch(lambda m, t: t.sum(), x)
    assert t.item() == 30000
    like_torch(lambda m, t: t.cumsum(0), x)
    like_torch(lambda m, t: t.prod(), np.array([100, 100, 100], dtype=np.int16))


@st.composite
def shape_and_dims(draw):
    shape = draw(array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4))
    dims = draw(st.lists(st.integers(0, max(len(shape) - 1, 0)), unique=True, max_size=len(shape)))
    dims = [d - len(shape) if draw(st.booleans()) else d for d in dims]  # negative dims too
    return shape, tuple(dims) if dims else None, draw(st.booleans())


@given(case=shape_and_dims())
@HYPOTHESIS
def test_reductions_over_any_dims(backend, case):
    shape, dim, keepdim = case
    x = uniform(shape, seed=7)
    axis = axis_of(shape, dim)
    for op in ("sum", "mean", "amax", "var-correction-0", "logsumexp"):
        if op == "logsumexp" and dim is None:
            continue
        call, reference = REDUCTIONS[op]
        assert_values(call(tw.tensor(x), dim, keepdim), reference(x, axis=axis, keepdims=keepdim))
    cotangent = uniform(np.sum(x, axis=axis, keepdims=keepdim).shape, seed=8)
    t = tw.tensor(x, requires_grad=True)
    REDUCTIONS["sum"][0](t, dim, keepdim).backward(tw.tensor(cotangent))
    expected = cotangent if keepdim or dim is None else np.expand_dims(cotangent, axis)
    assert_values(t.grad, np.broadcast_to(expected, shape))


def numpy_log_softmax(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize(
    "layout, dim", [("matrix", 1), ("matrix", 0), ("3d", -1), ("transposed", -2), ("scalar", 0)]
)
def test_softmax(backend, name, layout, dim):
    shape, view, _ = INPUTS[layout]
    x = signed(shape, seed=9)
    fn = getattr(tw.nn.functional, name)
    expected = numpy_log_softmax(view(x), axis=dim if shape else None)
    if name == "softmax":
        expected = np.exp(expected)
    assert_values(fn(view(tw.tensor(x)), dim=dim), expected, dtype="float64")
    gradcheck(lambda t: fn(view(t), dim), x)
    like_torch(lambda m, t: getattr(m.nn.functional, name)(view(t), dim=dim), x, dtype="float32")


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_is_stable(backend, name):
    x = np.array([[1000.0, 0.0, -1000.0], [-np.inf, 0.0, 1.0]])
    expected = numpy_log_softmax(x, axis=1)
    if name == "softmax":
        expected = np.exp(expected)
    assert_values(getattr(tw.nn.functional, name)(tw.tensor(x), dim=1), expected)
