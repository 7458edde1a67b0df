"""Regression tests for the differences from torch 2.13 in dtypes other than float64 that the
op-database harness (``triage.py --dtypes float32,float16,bfloat16,...``) and a sweep of edge
values found: each compares values, the result's dtype and gradients with real torch, and
gradients in float64 by central differences where the half-precision ones are compared."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

HALF = ["float16", "bfloat16"]


def _twin(t: torch.Tensor, requires_grad: bool = False) -> tw.Tensor:
    """``t``'s values as a tensorweaver leaf of the same dtype (bfloat16 through float32,
    which holds every bfloat16 exactly)."""
    dtype = getattr(tw, str(t.dtype).removeprefix("torch."))
    values = t.detach().float() if t.dtype == torch.bfloat16 else t.detach()
    return tw.tensor(values.numpy(), dtype=dtype, requires_grad=requires_grad)


def _host(t: tw.Tensor | torch.Tensor) -> np.ndarray:
    """Values as float64 NumPy (bfloat16 widened first)."""
    if isinstance(t, torch.Tensor):
        return t.detach().double().numpy()
    return np.asarray(t.detach().to(tw.float64))


def _skip_missing(backend: str, dtype: str) -> None:
    if dtype == "bfloat16" and backend == "numpy":
        pytest.skip("the NumPy backend has no bfloat16")


def _same(ours: tw.Tensor, theirs: torch.Tensor, rtol: float = 0.0, atol: float = 0.0) -> None:
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(_host(ours), _host(theirs), rtol=rtol, atol=atol)


def _central_differences(fn, x: np.ndarray, weights: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """d sum(weights * fn(x)) / dx in float64 by central differences."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        grad[i] = ((weights * (fn(x + step) - fn(x - step))).sum()) / (2 * h)
    return grad


# -- var in half precision --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize(
    "kwargs", [{}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"dim": 1, "correction": 0}]
)
def test_var_of_half_precision_squares_in_float32(backend, dtype, kwargs):
    # Before (torch:cpu): var of float16 values in the hundreds was inf (their squares
    # overflow float16), torch 13784.0; std and mean were already computed in float32.
    _skip_missing(backend, dtype)
    theirs_x = (torch.randn(4, 300, generator=torch.Generator().manual_seed(0)) * 100).to(
        getattr(torch, dtype)
    )
    ours = tw.var(_twin(theirs_x), **kwargs)
    theirs = torch.var(theirs_x, **kwargs)
    assert np.isfinite(_host(ours)).all()
    _same(ours, theirs, rtol=1e-2 if dtype == "bfloat16" else 2e-3)
    ours_pair, theirs_pair = tw.var_mean(_twin(theirs_x), 0), torch.var_mean(theirs_x, 0)
    for a, e in zip(ours_pair, theirs_pair):
        _same(a, e, rtol=1e-2 if dtype == "bfloat16" else 2e-3)


@pytest.mark.parametrize("dtype", HALF)
def test_var_of_half_precision_gradient(backend, dtype):
    _skip_missing(backend, dtype)
    generator = torch.Generator().manual_seed(1)
    theirs_x = (torch.randn(3, 5, generator=generator) * 100).to(getattr(torch, dtype))
    theirs_x.requires_grad_()
    weights = torch.rand(3, generator=generator) + 0.5
    ours_x = _twin(theirs_x, requires_grad=True)
    ours = tw.var(ours_x, dim=1)
    theirs = torch.var(theirs_x, dim=1)
    (expected,) = torch.autograd.grad((theirs * weights.to(theirs.dtype)).sum(), theirs_x)
    (actual,) = tw.autograd.grad((ours * _twin(weights.to(theirs.dtype))).sum(), ours_x)
    assert actual.dtype.name == dtype
    # (each gradient is rounded to the dtype: a few of its units of the largest one apart)
    atol = 2e-2 * float(expected.abs().max())
    _same(actual, expected, rtol=2e-2, atol=atol)
    x64 = _host(theirs_x)
    reference = _central_differences(
        lambda v: v.var(axis=1, ddof=1), x64, _host(weights.to(theirs.dtype)), h=1e-3
    )
    np.testing.assert_allclose(_host(actual), reference, rtol=2e-2, atol=atol)


# -- log1p of the largest floats --------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, values",
    [("float32", [3e38, 1e38, 1e30, 1.0, 1e-30]), ("float64", [1.7e308, 1e308, 1e300, 1e-300])],
)
def test_log1p_of_the_largest_floats_is_finite(backend, dtype, values):
    # Before: log1p(3e38) in float32 was inf (log(u) * x overflowed), torch 88.59685;
    # log1p(1e308) in float64 likewise.
    theirs_x = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    ours_x = _twin(theirs_x, requires_grad=True)
    ours, theirs = tw.log1p(ours_x), torch.log1p(theirs_x)
    _same(ours, theirs, rtol=1e-6 if dtype == "float32" else 1e-14)
    weights = torch.linspace(0.5, 1.5, len(values), dtype=theirs.dtype)
    (expected,) = torch.autograd.grad((theirs * weights).sum(), theirs_x)
    (actual,) = tw.autograd.grad((ours * _twin(weights)).sum(), ours_x)
    _same(actual, expected, rtol=1e-6 if dtype == "float32" else 1e-14)


# -- round(decimals) in float16 ---------------------------------------------------------------


@pytest.mark.parametrize("decimals", [2, 3, -2])
def test_round_with_decimals_of_float16_scales_in_float32(backend, decimals):
    # Before: round(10000.0 as float16, decimals=2) was inf (10000 * 100 overflows float16),
    # torch 10000.0.
    theirs_x = torch.tensor([10000.0, 65504.0, -30000.0, 1.2345, -0.0625, 6.5e-5, 0.5]).half()
    _same(tw.round(_twin(theirs_x), decimals=decimals), torch.round(theirs_x, decimals=decimals))


# -- bfloat16 functions composed from others: one rounding ------------------------------------


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", ["tan", "log2", "log10"])
def test_composed_functions_of_half_precision_round_once(backend, dtype, name):
    # Before (torch:cpu, bfloat16): log2(0.5) was -0.99609375 (log then a rounded division),
    # torch -1.0; log10(100.0) was 1.9921875, torch 2.0; tan(0.5) 0.54296875, torch 0.546875.
    _skip_missing(backend, dtype)
    values = [0.5, 100.0, 2.0, 0.1, 1.0, 3.0, 7.5, 1000.0, 0.001, 1.25, 0.75, 12.0]
    theirs_x = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    ours_x = _twin(theirs_x, requires_grad=True)
    ours, theirs = getattr(tw, name)(ours_x), getattr(torch, name)(theirs_x)
    _same(ours, theirs)  # float32 then one rounding on both sides: the same bits
    weights = torch.linspace(0.5, 1.5, len(values)).to(theirs.dtype)
    (expected,) = torch.autograd.grad((theirs * weights).sum(), theirs_x)
    (actual,) = tw.autograd.grad((ours * _twin(weights)).sum(), ours_x)
    _same(actual, expected, rtol=2e-2)
    reference = _central_differences(getattr(np, name), _host(theirs_x), _host(weights))
    np.testing.assert_allclose(_host(actual), reference, rtol=2e-2)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("tensor_weight", [False, True])
def test_lerp_of_half_precision_in_float32(backend, dtype, tensor_weight):
    # Before (torch:cpu, bfloat16): lerp(-300, 65536, 0.3) was 19584.0 (rounded three
    # times), torch 19456.0.
    _skip_missing(backend, dtype)
    torch_dtype = getattr(torch, dtype)
    start = torch.tensor([-300.0, 1.5, -7.25, 1000.0, 0.1], dtype=torch_dtype, requires_grad=True)
    end = torch.tensor([65504.0, -2.5, 3.0, -1000.0, 0.3], dtype=torch_dtype, requires_grad=True)
    weight = (
        torch.tensor([0.3, 0.7, 0.55, 0.45, 0.9], dtype=torch_dtype, requires_grad=True)
        if tensor_weight
        else 0.3
    )
    ours_args = [_twin(start, True), _twin(end, True)]
    ours_args.append(_twin(weight, True) if tensor_weight else weight)
    ours, theirs = tw.lerp(*ours_args), torch.lerp(start, end, weight)
    _same(ours, theirs)
    leaves = [start, end, *([weight] if tensor_weight else [])]
    expected = torch.autograd.grad(theirs.sum(), leaves)
    actual = tw.autograd.grad(ours.sum(), ours_args[: len(leaves)])
    for a, e in zip(actual, expected):
        _same(a, e, rtol=2e-2, atol=1e-2)


# -- addcmul / addcdiv: PyTorch's order of operations -----------------------------------------


def test_addcmul_and_addcdiv_multiply_value_first(backend):
    # addcmul(-0., 3e38, -0., value=2) in float32 is -0.0 (t1 * t2 first), torch NaN
    # (value * t1 is inf, times -0); addcdiv(0, 3e38, 4, value=2) is 1.5e38, torch inf.
    x, t1, t2 = (
        torch.tensor(v, dtype=torch.float32) for v in ([-0.0, 1.0], [3e38, 2.0], [-0.0, 3.0])
    )
    ours = tw.addcmul(_twin(x), _twin(t1), _twin(t2), value=2)
    _same(ours, torch.addcmul(x, t1, t2, value=2))
    x, t1, t2 = (
        torch.tensor(v, dtype=torch.float32) for v in ([0.0, 1.0], [3e38, 2.0], [4.0, 3.0])
    )
    ours = tw.addcdiv(_twin(x), _twin(t1), _twin(t2), value=2)
    _same(ours, torch.addcdiv(x, t1, t2, value=2))


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addcmul_and_addcdiv_gradients(backend, name):
    generator = torch.Generator().manual_seed(2)
    leaves = [torch.randn(3, 4, generator=generator, dtype=torch.float64) for _ in range(3)]
    leaves[2] = leaves[2].abs() + 0.5  # away from a zero divisor
    for t in leaves:
        t.requires_grad_()
    ours_leaves = [_twin(t, True) for t in leaves]
    ours = getattr(tw, name)(*ours_leaves, value=0.7)
    theirs = getattr(torch, name)(*leaves, value=0.7)
    _same(ours, theirs, rtol=1e-12)
    weights = torch.rand(3, 4, generator=generator, dtype=torch.float64)
    expected = torch.autograd.grad((theirs * weights).sum(), leaves)
    actual = tw.autograd.grad((ours * _twin(weights)).sum(), ours_leaves)
    for a, e in zip(actual, expected):
        _same(a, e, rtol=1e-12, atol=1e-12)


# -- complex expm1, log1p and tan from their parts --------------------------------------------


def _complex_grid(dtype: str) -> torch.Tensor:
    """Small, moderate and large complex numbers, and the parts' infinities."""
    generator = torch.Generator().manual_seed(3)
    z = torch.complex(*(torch.randn(12, generator=generator, dtype=torch.float64) for _ in "xy"))
    big = 3e38 if dtype == "complex64" else 1e300
    edges = torch.tensor(
        [1e-20, 1e-8 + 1e-9j, -1e-10, 1e-7j, 1e20j, -1e20j, 5 + 1e20j, big + 0.5j, 0.5 - big * 1j],
        dtype=torch.complex128,
    )
    return torch.cat([z, z * 1e-6, z * 30, edges]).to(getattr(torch, dtype))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", ["expm1", "log1p", "tan"])
def test_complex_expm1_log1p_tan_like_torch(backend, dtype, name):
    # Before: expm1(1e-8 + 1e-9j) in complex64 was 1e-9j (exp(z) - 1 lost the real part),
    # torch 1e-8 + 1e-9j; log1p(1e20j) was inf + 1.5708j (y^2 overflowed), torch
    # 46.0517 + 1.5708j; tan(1e20j) was NaN (sin / cos is inf / inf), torch 1j.
    theirs_z = _complex_grid(dtype)
    ours, theirs = getattr(tw, name)(_twin(theirs_z)), getattr(torch, name)(theirs_z)
    rtol = 2e-6 if dtype == "complex64" else 1e-13
    assert ours.dtype.name == dtype
    got, want = np.asarray(ours), theirs.numpy()
    finite = np.isfinite(want)
    # relative to the modulus: a part that cancels (expm1's real part near y = 0) is rounded
    # differently by any two float32 formulas
    assert (np.abs(got[finite] - want[finite]) <= rtol * np.abs(want[finite]) + 1e-35).all()
    for part in (np.real, np.imag):  # the infinities and NaNs, part by part
        np.testing.assert_array_equal(part(got[~finite]), part(want[~finite]))


@pytest.mark.parametrize("name", ["expm1", "log1p", "tan"])
def test_complex_expm1_log1p_tan_gradients(backend, name):
    generator = torch.Generator().manual_seed(4)
    parts = [torch.randn(16, generator=generator, dtype=torch.float64) for _ in range(4)]
    z = torch.complex(parts[0], parts[1]) * torch.tensor([1e-6, 0.3, 1.0, 3.0]).repeat(4)
    weights = torch.complex(parts[2], parts[3])
    theirs_z = z.clone().requires_grad_()
    ours_z = _twin(theirs_z, requires_grad=True)
    theirs = getattr(torch, name)(theirs_z)
    ours = getattr(tw, name)(ours_z)
    (expected,) = torch.autograd.grad((theirs * weights).real.sum(), theirs_z)
    (actual,) = tw.autograd.grad(tw.real(ours * _twin(weights)).sum(), ours_z)
    np.testing.assert_allclose(np.asarray(actual), expected.numpy(), rtol=1e-10, atol=1e-14)
    # by central differences along the real axis (each function is holomorphic there):
    # the gradient of Re(w f(z)) is conj(w f'(z))
    h = 1e-6
    fn = getattr(np, name)
    slope = (fn(z.numpy() + h) - fn(z.numpy() - h)) / (2 * h)
    np.testing.assert_allclose(
        np.asarray(actual), np.conj(weights.numpy() * slope), rtol=1e-6, atol=1e-9
    )
