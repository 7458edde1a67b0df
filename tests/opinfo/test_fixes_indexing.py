"""Regression tests for the indexing, scatter and numeric differences from torch that the
op-database harness found (``triage.py``), each against real torch 2.13 (values, dtypes,
gradients, exception classes)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import torch
from opinfo.twins import pair as _pair
from tensorweaver.ops.index import nonzero_static

BACKENDS = ["numpy", "torch:cpu"]
INF, NAN = math.inf, math.nan


def _same(ours, theirs, tol: float = 1e-10) -> None:
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(
        np.asarray(ours.detach()),
        theirs.detach().resolve_conj().numpy(),
        rtol=tol,
        atol=tol,
        equal_nan=True,
    )


def _weighted_grads(out_ours, out_theirs, leaves_ours, leaves_theirs, seed: int = 0) -> None:
    """Backpropagate the same random weights through both results; the leaves' gradients
    agree (None as zeros)."""
    weights = np.random.default_rng(seed).standard_normal(tuple(out_theirs.shape))
    if out_theirs.dtype.is_complex:
        weights = weights + 1j * np.random.default_rng(seed + 1).standard_normal(weights.shape)
    ours = (out_ours * tw.tensor(weights)).sum()
    (tw.real(ours) if ours.dtype.kind == "c" else ours).backward()
    theirs = (out_theirs * torch.tensor(weights)).sum()
    (theirs.real if theirs.is_complex() else theirs).backward()
    for ours, theirs in zip(leaves_ours, leaves_theirs):
        expected = torch.zeros_like(theirs) if theirs.grad is None else theirs.grad
        got = tw.zeros_like(ours) if ours.grad is None else ours.grad
        _same(got, expected)


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_into_zero_dim_input(backend, reduce, include_self):
    # Before: IndexError "tuple index out of range" (opinfo sample #0: a 0-d input and
    # source with a 1-element index); torch takes them as 1-element vectors.
    x, tx = _pair(1.5, requires_grad=True)
    src, tsrc = _pair(-0.75, requires_grad=True)
    index, tindex = _pair([0], "int64")
    out = tw.index_reduce(x, 0, index, src, reduce, include_self=include_self)
    expected = torch.index_reduce(tx, 0, tindex, tsrc, reduce, include_self=include_self)
    _same(out, expected)
    _weighted_grads(out, expected, (x, src), (tx, tsrc))
    method = x.detach().index_reduce(0, index, src.detach(), reduce, include_self=include_self)
    _same(method, expected)


@pytest.mark.parametrize("op", ["scatter", "scatter_add"])
def test_scatter_zero_dim_backward(backend, op):
    # Before: scatter's backward raised TypeError "'numpy.float64' object does not support
    # item assignment" on NumPy (opinfo sample #7: 0-d input, index and src).
    x, tx = _pair(1.5, requires_grad=True)
    src, tsrc = _pair(2.0, requires_grad=True)
    index, tindex = _pair(0, "int64")
    out = getattr(tw, op)(x, 0, index, src)
    expected = getattr(torch, op)(tx, 0, tindex, tsrc)
    _same(out, expected)
    _weighted_grads(out, expected, (x, src), (tx, tsrc))


def test_as_strided_scatter_input_gradient_is_finite_differences(backend):
    # The harness reports grad[0][0] 0.0 where torch gives 1.47 (opinfo sample #0): torch
    # 2.13's AsStridedScatterBackward keeps the gradient where src was written and drops it
    # elsewhere (torch.autograd.gradcheck fails on it). The gradient here is the finite
    # differences of torch's own forward.
    rng = np.random.default_rng(0)
    base, values = rng.standard_normal(9), rng.standard_normal((2, 2))
    weights = rng.standard_normal(9)

    def forward(flat: np.ndarray) -> np.ndarray:
        t = torch.as_strided_scatter(
            torch.tensor(flat).view(3, 3), torch.tensor(values), (2, 2), (1, 2), 1
        )
        return t.reshape(-1).numpy()

    eps = 1e-6
    expected = np.array(
        [
            np.sum(weights * (forward(base + eps * e) - forward(base - eps * e))) / (2 * eps)
            for e in np.eye(9)
        ]
    )
    x = tw.tensor(base.reshape(3, 3), requires_grad=True)
    out = tw.as_strided_scatter(x, tw.tensor(values), (2, 2), (1, 2), 1)
    (out.reshape(-1) * tw.tensor(weights)).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad).reshape(-1), expected, atol=1e-8)
    np.testing.assert_allclose(np.asarray(out.detach()).reshape(-1), forward(base))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "float32", "bool"])
def test_empty_index_of_any_dtype(backend, dtype):
    # Before: gather raised RuntimeError "expected an int64 or int32 index, got uint8"
    # (opinfo sample #3), and an empty int64 index gave a result outside x's graph; torch
    # checks neither the dtype nor the sizes of an empty index.
    x, tx = _pair(np.arange(5.0), requires_grad=True)
    index, tindex = _pair(np.zeros((0, 3)), dtype)
    column, tcolumn = x.view(5, 1), tx.view(5, 1)
    out, expected = tw.gather(column, 0, index), torch.gather(tcolumn, 0, tindex)
    _same(out, expected)
    assert out.requires_grad == expected.requires_grad
    _weighted_grads(out, expected, (x,), (tx,))
    flat, tflat = index.reshape(-1), tindex.reshape(-1)
    _same(x.detach().gather(0, flat), tx.detach().gather(0, tflat))
    for op in ("scatter", "scatter_add"):
        _same(getattr(tw, op)(x, 0, flat, x), getattr(torch, op)(tx, 0, tflat, tx))
    _same(tw.scatter_reduce(x, 0, flat, x, "sum"), torch.scatter_reduce(tx, 0, tflat, tx, "sum"))


def test_take_along_dim_counts_negative_indices_from_the_end(backend):
    # Before: RuntimeError "gather(): index -5 is out of bounds for dimension 1 with size 5"
    # (opinfo sample #4); with a dim, torch takes indices in [-size, size).
    rng = np.random.default_rng(0)
    x, tx = _pair(rng.standard_normal((5, 5)), requires_grad=True)
    index, tindex = _pair(rng.integers(-5, 5, (5, 3)), "int64")
    out, expected = tw.take_along_dim(x, index, 1), torch.take_along_dim(tx, tindex, 1)
    _same(out, expected)
    _weighted_grads(out, expected, (x,), (tx,))
    _same(x.detach().take_along_dim(index[:, :1], 0), tx.detach().take_along_dim(tindex[:, :1], 0))
    # Without a dim, torch still refuses negative indices.
    with pytest.raises(RuntimeError):
        torch.take_along_dim(tx, torch.tensor([-1]))
    with pytest.raises(RuntimeError):
        tw.take_along_dim(x, tw.tensor([-1]))
    with pytest.raises(IndexError):
        torch.take_along_dim(torch.tensor(1.0), torch.tensor(0), 0)
    with pytest.raises(IndexError, match="no dimensions"):
        tw.take_along_dim(tw.tensor(1.0), tw.tensor(0), 0)


@pytest.mark.parametrize("op", ["var_mean", "std_mean"])
def test_var_mean_unbiased_overloads(backend, op):
    # Before: TypeError "mean(): argument 'dim' must be int, not bool" for var_mean(x, True)
    # (opinfo var_mean.unbiased / std_mean.unbiased); also (x, dim, unbiased, keepdim).
    x, tx = _pair(np.random.default_rng(0).standard_normal((4, 5)), requires_grad=True)
    ours, theirs = getattr(tw, op), getattr(torch, op)
    for args in [(True,), (False,), (1, False), (1, True, True), ([0, 1], False)]:
        out, expected = ours(x, *args), theirs(tx, *args)
        for a, b in zip(out, expected):
            _same(a, b)
    out, expected = ours(x, 0, False, True), theirs(tx, 0, False, True)
    _weighted_grads(out[0], expected[0], (x,), (tx,))
    for call in (theirs, ours):
        with pytest.raises(TypeError):
            call(tx if call is theirs else x, 1, unbiased=False, correction=1)


_COMPLEX_A = [1 + 2j, complex(-INF, 1), complex(INF, 0), 3 - 1j, complex(NAN, 0), 1e308 + 1j]
_COMPLEX_B = [0.5 - 1j, complex(-INF, 2), complex(INF, 1), 3 + 1j, 1 + 1j, 1e308 + 2j]


def test_logaddexp_complex(backend):
    # Before: NotImplementedError '"logaddexp" not implemented for complex128 tensors'.
    a, ta = _pair(_COMPLEX_A + [complex(1, NAN), complex(-INF, 0)], "complex128")
    b, tb = _pair(_COMPLEX_B + [1 + 0j, 5 + 1j], "complex128")
    _same(tw.logaddexp(a, b), torch.logaddexp(ta, tb))
    _same(a.logaddexp(b), ta.logaddexp(tb))
    real, treal = _pair([1.0, -2.0], "float64")
    _same(tw.logaddexp(real, b[:2]), torch.logaddexp(treal, tb[:2]))
    rng = np.random.default_rng(0)
    values = rng.standard_normal((2, 6)) + 1j * rng.standard_normal((2, 6))
    (a, b), (ta, tb) = zip(*(_pair(v, "complex128", requires_grad=True) for v in values))
    _weighted_grads(tw.logaddexp(a, b), torch.logaddexp(ta, tb), (a, b), (ta, tb))
    with pytest.raises(NotImplementedError):
        torch.logaddexp2(ta, tb)
    with pytest.raises(NotImplementedError):
        tw.logaddexp2(a, b)


def test_logcumsumexp_complex(backend):
    # Before: NotImplementedError '"logcumsumexp" not implemented for complex128 tensors';
    # torch adds one element after another, and the imaginary parts (not reduced mod 2 pi)
    # depend on that order (opinfo sample #3: 7.7511j, a tree of additions -4.8153j).
    rng = np.random.default_rng(3)
    values = 3 * rng.standard_normal((3, 6)) + 4j * rng.standard_normal((3, 6))
    x, tx = _pair(values, "complex128", requires_grad=True)
    out, expected = tw.logcumsumexp(x, 1), torch.logcumsumexp(tx, 1)
    _same(out, expected)
    _weighted_grads(out, expected, (x,), (tx,))
    _same(x.detach().logcumsumexp(0), tx.detach().logcumsumexp(0))
    for special in (_COMPLEX_A, [complex(-INF, 1), 1 + 2j], complex(-INF, 1), np.zeros((2, 0))):
        s, ts = _pair(special, "complex128")
        _same(tw.logcumsumexp(s, -1), torch.logcumsumexp(ts, -1))


@pytest.mark.parametrize(
    ("shape_a", "shape_b", "dims"),
    [((1, 1, 1), (2, 1, 2), ([0, 1], [2, 0])), ((3, 1, 4), (4, 5, 2), ([1, 2], [1, 0]))],
)
def test_tensordot_broadcasts_contracted_dims_of_size_one(backend, shape_a, shape_b, dims):
    # Before: RuntimeError "contracted dimensions need to match, but first has size 1 in dim
    # 0 and second has size 2 in dim 2" (opinfo sample #2); torch sums the other side there.
    rng = np.random.default_rng(0)
    a, ta = _pair(rng.standard_normal(shape_a), requires_grad=True)
    b, tb = _pair(rng.standard_normal(shape_b), requires_grad=True)
    out, expected = tw.tensordot(a, b, dims=dims), torch.tensordot(ta, tb, dims=dims)
    _same(out, expected)
    _weighted_grads(out, expected, (a, b), (ta, tb))
    ia, ita = _pair(rng.integers(0, 5, shape_a), "int64")
    ib, itb = _pair(rng.integers(0, 5, shape_b), "int64")
    _same(tw.tensordot(ia, ib, dims=dims), torch.tensordot(ita, itb, dims=dims))


@pytest.mark.parametrize(
    ("shape", "args"), [((), (0, 0, 1)), ((10, 5, 20), (3, 0, 0)), ((20, 5, 10), (-4, 0, 0))]
)
def test_narrow_copy_error_classes(backend, shape, args):
    # Before: IndexError for a 0-d input and for dim == ndim, where torch's narrow_copy
    # raises RuntimeError (its IndexError is for dim < -ndim).
    with pytest.raises(Exception) as theirs:
        torch.narrow_copy(torch.zeros(shape), *args)
    with pytest.raises(type(theirs.value)):
        tw.narrow_copy(tw.zeros(shape), *args)


@pytest.mark.parametrize("size", [0, 2, 5])
def test_nonzero_static(backend, size):
    # Before: missing (opinfo nonzero_static).
    x, tx = _pair([[0, 1], [2, 0], [3, 4]], "int64")
    _same(nonzero_static(x, size=size), torch.nonzero_static(tx, size=size))
    _same(
        nonzero_static(x, size=size, fill_value=-7),
        torch.nonzero_static(tx, size=size, fill_value=-7),
    )
    for scalar in (3.0, 0.0):
        s, ts = _pair(scalar)
        _same(nonzero_static(s, size=size), torch.nonzero_static(ts, size=size))
    with pytest.raises(RuntimeError):
        torch.nonzero_static(tx, size=-1)
    with pytest.raises(RuntimeError):
        nonzero_static(x, size=-1)


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize(
    ("shape", "dim", "index", "source_shape"),
    [
        ((3, 4), 1, [0, 1], (2, 2)),  # before: a result, torch refuses the source's shape
        ((3, 4), 1, [0, 1], (3, 3)),  # before: IndexError
        ((3, 4), 1, [[0, 1]], (3, 2)),
        ((3, 4), 1, [0, 1], (3, 2, 1)),  # before: IndexError
        ((3, 4), 1, [0, 1], (2,)),  # before: IndexError
        ((), 0, [0], (1,)),  # before: IndexError
        ((), 0, [0, 0], ()),
        ((3, 4), 0, [0, 5], (2, 4)),
    ],
)
def test_index_reduce_refuses_what_torch_refuses(backend, shape, dim, index, source_shape):
    with pytest.raises(Exception) as theirs:
        torch.index_reduce(
            torch.zeros(shape), dim, torch.tensor(index), torch.ones(source_shape), "prod"
        )
    with pytest.raises(type(theirs.value)):
        tw.index_reduce(tw.zeros(shape), dim, tw.tensor(index), tw.ones(source_shape), "prod")
