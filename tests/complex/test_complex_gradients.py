"""Gradients of real losses of complex tensors: tensorweaver's ``.grad`` equals PyTorch's
through every differentiable complex op (complex128 and float64 leaves), and equals finite
differences taken in the real and imaginary parts separately (PyTorch's convention: for
z = x + iy the gradient is dL/dx + i dL/dy). A real leaf of a complex computation gets a
real gradient."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from complex_reference import cplx, gradcheck, grads_like_torch, real_loss, same
from tensor_reference import raises_like_torch, signed

Case = tuple[Callable[..., Any], tuple]
A, B = cplx((3, 4), 1), cplx((3, 4), 2)
ROW, R = cplx((4,), 3), signed((3, 4), seed=4)
POSITIVE = signed((3, 4), seed=5, low=0.5, high=2.0).__abs__()
GATHER = np.array([[0, 2, 1, 0], [2, 1, 0, 2]])

CASES: dict[str, Case] = {
    # arithmetic, complex with complex, real tensors and Python scalars
    "add": (lambda m, x, y: x + y * 2, (A, ROW)),
    "sub": (lambda m, x, y: (1 - 2j) - x - y, (A, B)),
    "mul": (lambda m, x, y: x * y * (0.5 + 1j), (A, ROW)),
    "div": (lambda m, x, y: x / y + 1j / x, (A, B)),
    "pow_int": (lambda m, x: x**3, (A,)),
    "pow_complex": (lambda m, x, y: x**y, (A, B)),
    "pow_scalar_base": (lambda m, x: 2**x, (A,)),
    "mul_real": (lambda m, x, r: x * r, (A, R)),
    "div_real": (lambda m, x, r: r / x + x / r, (A, R)),
    "add_real": (lambda m, x, r: x + r, (A, R)),
    # unary
    "exp": (lambda m, x: x.exp(), (A,)),
    "log": (lambda m, x: x.log(), (A,)),
    "sqrt": (lambda m, x: x.sqrt(), (A,)),
    "rsqrt": (lambda m, x: x.rsqrt(), (A,)),
    "sin": (lambda m, x: x.sin(), (A,)),
    "cos": (lambda m, x: x.cos(), (A,)),
    "tan": (lambda m, x: x.tan(), (A,)),
    "tanh": (lambda m, x: x.tanh(), (A,)),
    "asin_acos": (lambda m, x: x.asin() + x.acos() * 2j, (A,)),
    "atan": (lambda m, x: x.atan(), (A,)),
    "asinh_acosh_atanh": (lambda m, x: x.asinh() + x.acosh() * 1j + x.atanh(), (A,)),
    "neg": (lambda m, x: -x, (A,)),
    "abs": (lambda m, x: x.abs(), (A,)),
    "reciprocal": (lambda m, x: x.reciprocal(), (A,)),
    "square": (lambda m, x: x.square(), (A,)),
    "log2_log10": (lambda m, x: x.log2() + x.log10(), (A,)),
    "sgn": (lambda m, x: m.sgn(x), (A,)),
    "sigmoid_log1p_expm1": (lambda m, x: x.sigmoid() + (x * 0.3).log1p() + x.expm1(), (A,)),
    "angle": (lambda m, x: m.angle(x), (A,)),
    "conj": (lambda m, x: x.conj() * x, (A,)),
    "conj_physical": (lambda m, x: m.conj_physical(x) + x * 2, (A,)),
    "real_imag": (lambda m, x: x.real * 2 + x.imag**2, (A,)),
    # reductions
    "sum": (lambda m, x: x.sum(1), (A,)),
    "mean": (lambda m, x: x.mean(), (A,)),
    "prod": (lambda m, x: x.prod(0), (A,)),
    "var": (lambda m, x: x.var(1), (A,)),
    "std": (lambda m, x: x.std(), (A,)),
    "cumsum": (lambda m, x: x.cumsum(1), (A,)),
    "cumprod": (lambda m, x: x.cumprod(1), (A,)),
    "norm": (lambda m, x: x.norm(dim=0), (A,)),
    # linear algebra
    "matmul": (lambda m, x, y: x @ y.mT, (A, B)),
    "matvec": (lambda m, x, y: x @ y, (A, ROW)),
    "bmm": (lambda m, x, y: m.bmm(x.reshape(3, 2, 2), y.reshape(3, 2, 2)), (A, B)),
    "einsum": (lambda m, x, y: m.einsum("ij,kj->ik", x, y), (A, B)),
    "vdot": (lambda m, x, y: m.vdot(x, y), (ROW, cplx((4,), 6))),
    "dot": (lambda m, x, y: m.dot(x, y), (ROW, cplx((4,), 7))),
    "mH": (lambda m, x, y: x.mH @ y, (A, B)),
    "H": (lambda m, x: x.H * 1j, (A,)),
    # parts and constructions
    "complex": (lambda m, r, s: m.complex(r, s), (R, signed((4,), seed=8))),
    "polar": (lambda m, r, s: m.polar(r, s), (POSITIVE, R)),
    "view_as_real": (lambda m, x: m.view_as_real(x), (A,)),
    "view_as_complex": (lambda m, r: m.view_as_complex(r.reshape(3, 2, 2)), (R,)),
    "to_complex": (lambda m, r: r.to(m.complex128) * (1 + 1j), (R,)),
    # structure
    "index": (lambda m, x: x[1:, ::2] * x[m.tensor([0, 2, 2])][:2, 1:3], (A,)),
    "mask": (lambda m, x: x[x.real > 0], (A,)),
    "cat_stack": (lambda m, x, y: m.cat([x, m.stack([y, y])[0]], 1), (A, B)),
    "reshape_permute": (lambda m, x: x.reshape(2, 6).permute(1, 0).flip(0), (A,)),
    "where": (lambda m, x, y: m.where(x.real > y.real, x, y), (A, B)),
    "where_scalar": (lambda m, x: m.where(x.imag > 0, x, 1j), (A,)),
    "masked_fill": (lambda m, x: x.masked_fill(x.imag > 0, 2 - 1j), (A,)),
    "index_select": (lambda m, x: x.index_select(1, m.tensor([3, 0, 3])), (A,)),
    "gather": (lambda m, x: x.gather(0, m.tensor(GATHER)), (A,)),
    "scatter": (lambda m, x, y: x.scatter(0, m.tensor(GATHER[:1]), y[:1]), (A, B)),
    "scatter_add": (lambda m, x, y: x.scatter_add(0, m.tensor(GATHER), y[:2]), (A, B)),
    "expand_repeat": (lambda m, x: x.expand(2, 4) * x.repeat(2, 1), (ROW,)),
}


@pytest.mark.parametrize("name", CASES)
def test_grads_like_pytorch(backend: str, name: str) -> None:
    fn, arrays = CASES[name]
    grads = grads_like_torch(fn, *arrays)
    assert all(g is not None for g in grads)


@pytest.mark.parametrize("name", CASES)
def test_finite_differences(backend: str, name: str) -> None:
    fn, arrays = CASES[name]
    gradcheck(fn, *arrays)


@pytest.mark.cunumeric
def test_on_cunumeric_sample(backend: str) -> None:
    for name in ("mul", "abs", "sum", "matmul", "view_as_real"):
        fn, arrays = CASES[name]
        grads_like_torch(fn, *arrays)


def test_real_leaf_times_complex_constant_gets_a_real_gradient(backend: str) -> None:
    r = signed((3,), seed=9)
    constant = cplx((3,), 10)
    found = []
    for m in (tw, torch):
        leaf = m.tensor(r, requires_grad=True)
        out = leaf * m.tensor(constant)
        real_loss(m, out).backward()
        found.append(leaf.grad)
    assert found[0].dtype is tw.float64
    same(found[0], found[1])
    gradcheck(lambda m, x: x * m.tensor(constant) + (x * 1j).exp(), r)


def test_complex_loss_needs_a_gradient(backend: str) -> None:
    # backward() of a complex output needs an explicit gradient, as in PyTorch.
    raises_like_torch(lambda m, x: (x * 2).sum().backward(), A)


def test_explicit_complex_cotangent(backend: str) -> None:
    v = cplx((3, 4), 11)
    found = []
    for m in (tw, torch):
        x = m.tensor(A, requires_grad=True)
        (x * x.conj().exp()).backward(m.tensor(v))
        found.append(x.grad)
    same(found[0], found[1])


def test_autograd_grad_and_complex64(backend: str) -> None:
    found = []
    for m in (tw, torch):
        x = m.tensor(A, dtype=m.complex64, requires_grad=True)
        loss = (x.abs() ** 2 + (x * (1 + 2j)).real).sum()
        (g,) = m.autograd.grad(loss, x)
        found.append(g)
    same(found[0], found[1])
