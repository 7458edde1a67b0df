"""Complex arithmetic against PyTorch: ``+ - * / **`` with broadcasting, real operands and
Python scalars; the unary functions; matmul, bmm and einsum."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from complex_reference import cplx, like_torch
from tensor_reference import raises_like_torch, signed

BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "pow": operator.pow,
}
UNARY = (
    "exp",
    "log",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "neg",
    "abs",
    "reciprocal",
    "square",
    "rsqrt",
    "log2",
    "log10",
    "sgn",
    "sigmoid",
    "log1p",
    "expm1",
)
#: Functions PyTorch computes on complex numbers that tensorweaver's ops/special.py does not
#: (yet: it casts complex input to real): they must match PyTorch once it does.
#: Composed from exp for complex input (no branch cut involved).
COMPOSED = ("sinh", "cosh", "exp2")
#: The inverse functions: the backend's complex kernel (C99's principal values).
INVERSE = ("asin", "acos", "atan", "asinh", "acosh", "atanh")


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_binary_broadcasting(backend: str, op: str, dtype: str) -> None:
    fn = BINARY[op]
    a, b = cplx((3, 1, 4), 1), cplx((2, 4), 2)
    like_torch(lambda m, x, y: fn(x.to(getattr(m, dtype)), y.to(getattr(m, dtype))), a, b)


@pytest.mark.parametrize("op", BINARY)
def test_with_real_tensors(backend: str, op: str) -> None:
    fn = BINARY[op]
    z, r = cplx((3, 4), 3), signed((4,), seed=4)
    like_torch(lambda m, x, y: fn(x, y), z, r)  # complex128 with float64
    like_torch(lambda m, x, y: fn(y, x), z, r)
    like_torch(lambda m, x, y: fn(x.to(m.complex64), y), z, r)  # complex64 with float64
    like_torch(lambda m, x, y: fn(y.float(), x), z, r)  # float32 with complex128
    like_torch(lambda m, x: fn(x, m.tensor([1, 2, 3, 4])), z)  # with int64


@pytest.mark.cunumeric
@pytest.mark.parametrize("op", BINARY)
def test_with_python_scalars(backend: str, op: str) -> None:
    fn = BINARY[op]
    z = cplx((2, 3), 5)
    for scalar in (2, -1.5, 0.5 - 2j, 1j):
        like_torch(lambda m, x, s=scalar: fn(x.to(m.complex64), s), z)
        like_torch(lambda m, x, s=scalar: fn(s, x), z)
    like_torch(lambda m, x: fn(x, 2j), signed((3,), seed=6))  # a real tensor with complex


def test_integer_powers_and_zero(backend: str) -> None:
    z = cplx((5,), 7)
    like_torch(lambda m, x: x**2, z)
    like_torch(lambda m, x: x**-1, z)
    like_torch(lambda m, x: x**0, z)
    # (0 ** 0 is left out: PyTorch's complex pow gives NaN there, NumPy and Python 1.)
    like_torch(lambda m: m.zeros(2, dtype=m.complex128) ** m.tensor([2.0, 1 + 1j]))


def test_in_place_arithmetic(backend: str) -> None:
    def run(m, x, y):
        x = x.clone()
        x.add_(y, alpha=2)
        x.mul_(1 - 1j)
        x.div_(y)
        x.sub_(3)
        return x

    like_torch(run, cplx((2, 3), 8), cplx((3,), 9))


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_unary(backend: str, op: str, dtype: str) -> None:
    like_torch(lambda m, x: getattr(x.to(getattr(m, dtype)), op)(), cplx((3, 4), 10))
    like_torch(lambda m, x: getattr(m, op)(x.to(getattr(m, dtype))), cplx((), 11))


@pytest.mark.cunumeric
def test_unary_on_cunumeric_sample(backend: str) -> None:
    for op in ("exp", "log", "sqrt", "abs", "reciprocal"):
        like_torch(lambda m, x, op=op: getattr(x, op)(), cplx((2, 3), 12))


def test_branch_cuts_and_special_values(backend: str) -> None:
    values = np.array([-1 + 0j, -4 + 0j, 0j, 1j, -1j, complex(np.inf, 0), complex(0, np.nan)])
    for op in ("sqrt", "log", "abs", "exp", "reciprocal"):
        like_torch(
            lambda m, x, op=op: getattr(x, op)(), values[:5] if op == "reciprocal" else values
        )


@pytest.mark.parametrize("op", COMPOSED)
def test_unary_composed_from_exp(backend: str, op: str) -> None:
    like_torch(lambda m, x: getattr(x, op)(), cplx((3,), 13, high=0.9))


@pytest.mark.parametrize("op", INVERSE)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_inverse_functions(backend: str, op: str, dtype: str) -> None:
    # Values off and on every branch cut (the real axis beyond +-1, the imaginary axis
    # beyond +-i), both signs of a zero imaginary part, zeros, infinities, NaN.
    cuts = [2 + 0j, -2 + 0j, complex(2, -0.0), complex(-2, -0.0), 3j, -3j, complex(0.0, 3)]
    cuts += [complex(-0.0, 3), 1 + 0j, -1 + 0j, 0j, complex(np.inf, 1), complex(1, np.nan)]
    values = np.concatenate([cplx((3, 4), 16).ravel() * 3, np.array(cuts)])
    like_torch(lambda m, x: getattr(x.to(getattr(m, dtype)), op)(), values)
    like_torch(lambda m, x: getattr(m, op)(x.to(getattr(m, dtype))), cplx((), 17))


@pytest.mark.cunumeric
def test_inverse_functions_on_cunumeric_sample(backend: str) -> None:
    for op in INVERSE:
        like_torch(lambda m, x, op=op: getattr(x, op)(), cplx((2, 3), 18) * 2)


@pytest.mark.cunumeric
def test_matmul(backend: str) -> None:
    a, b = cplx((3, 4), 14), cplx((4, 2), 15)
    like_torch(lambda m, x, y: x @ y, a, b)
    like_torch(lambda m, x, y: m.matmul(x.to(m.complex64), y.to(m.complex64)), a, b)
    like_torch(lambda m, x, y: x @ y[:, 0], a, b)  # matrix-vector
    like_torch(lambda m, x, y: m.mm(x, y), a, b)


def test_matmul_with_a_real_matrix_raises_like_torch(backend: str) -> None:
    # PyTorch refuses two dtypes in a matrix product (it promotes only elementwise ops).
    a, r = cplx((3, 4), 16), signed((4, 2), seed=17)
    raises_like_torch(lambda m, x, y: x @ y, a, r)
    like_torch(lambda m, x, y: x @ y.to(x.dtype), a, r)


def test_bmm_einsum_dot_outer(backend: str) -> None:
    a, b = cplx((2, 3, 4), 18), cplx((2, 4, 5), 19)
    like_torch(lambda m, x, y: m.bmm(x, y), a, b)
    like_torch(lambda m, x, y: x @ y, a, b)
    like_torch(lambda m, x, y: m.einsum("bij,bjk->bik", x, y), a, b)
    like_torch(lambda m, x, y: m.einsum("bij,bjk->", x, y), a, b)
    u, v = cplx((4,), 20), cplx((4,), 21)
    like_torch(lambda m, x, y: m.dot(x, y), u, v)
    like_torch(lambda m, x, y: m.vdot(x, y), u, v)
    like_torch(lambda m, x, y: m.outer(x, y), u, v)
    like_torch(lambda m, x, y: m.inner(x, y), u, v)
    # vecdot conjugates its first operand (it computed sum(x * y) before)
    like_torch(lambda m, x, y: m.linalg.vecdot(x, y), a[:, :, :3], b[:, :3, :3])
    like_torch(lambda m, x, y: m.linalg.vecdot(x, y, dim=0), u, v)
