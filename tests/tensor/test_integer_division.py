"""Integer division by zero raises PyTorch's CPU error (RuntimeError "ZeroDivisionError") on
every backend, before a backend divides; two bool operands raise NotImplementedError. Every
spelling is covered: ``//``, ``%``, ``floor_divide``, ``remainder``, ``div`` with rounding,
``fmod``, their in-place forms, Python-number divisors on either side.
"""

from __future__ import annotations

import numpy as np
import pytest
from tensor_reference import like_torch, raises_like_torch

DIVIDEND = np.array([7, -3, 5, 0])
DIVISOR = np.array([2, 0, -1, 3])  # one zero


def _inplace(method):
    def call(m, a, b):
        return getattr(a.clone(), method)(b)

    return call


def _ifloordiv(m, a, b):
    a = a.clone()
    a //= b
    return a


def _imod(m, a, b):
    a = a.clone()
    a %= b
    return a


# name: (call on either library with tensor operands a and b, op named in the message)
DIVISIONS = {
    "//": (lambda m, a, b: a // b, "floor_divide"),
    "%": (lambda m, a, b: a % b, "remainder"),
    "floor_divide": (lambda m, a, b: m.floor_divide(a, b), "floor_divide"),
    "remainder": (lambda m, a, b: m.remainder(a, b), "remainder"),
    "remainder-method": (lambda m, a, b: a.remainder(b), "remainder"),
    "div-floor": (lambda m, a, b: m.div(a, b, rounding_mode="floor"), "div"),
    "div-trunc": (lambda m, a, b: a.div(b, rounding_mode="trunc"), "div"),
    "//=": (_ifloordiv, "floor_divide"),
    "%=": (_imod, "remainder"),
    "floor_divide_": (_inplace("floor_divide_"), "floor_divide"),
    "remainder_": (_inplace("remainder_"), "remainder"),
    "fmod_": (_inplace("fmod_"), "fmod"),
    "div_-trunc": (lambda m, a, b: a.clone().div_(b, rounding_mode="trunc"), "div"),
    "number-divisor": (lambda m, a, b: a // 0, "floor_divide"),
    "number-divisor-%": (lambda m, a, b: a % 0, "remainder"),
    "number-divisor-remainder": (lambda m, a, b: m.remainder(a, 0), "remainder"),
    "number-divisor-div-trunc": (lambda m, a, b: m.div(a, 0, rounding_mode="trunc"), "div"),
    "number-dividend": (lambda m, a, b: 7 // b, "floor_divide"),
    "number-dividend-%": (lambda m, a, b: 7 % b, "remainder"),
    "0-d-divisor": (lambda m, a, b: a // b[1], "floor_divide"),
}
#: NumPy wraps, so the zero divisor also hides in every narrower integer dtype.
DTYPES = ("int64", "int32", "int16", "uint8")
CUNUMERIC = {("//", "int64"), ("%=", "int32"), ("number-divisor", "int64")}


def division_cases():
    for name in DIVISIONS:
        for dtype in DTYPES:
            marks = pytest.mark.cunumeric if (name, dtype) in CUNUMERIC else ()
            yield pytest.param(name, dtype, marks=marks, id=f"{name}-{dtype}")


@pytest.mark.parametrize(("name", "dtype"), list(division_cases()))
class TestIntegerDivisionByZero:
    def test_raises_like_torch(self, backend, name, dtype):
        fn, op = DIVISIONS[name]
        a, b = DIVIDEND.astype(dtype), np.abs(DIVISOR).astype(dtype)
        raises_like_torch(fn, a, b, match=[rf"{op}\(\): ZeroDivisionError"])
        if not name.startswith("number-dividend") and name != "0-d-divisor":
            # An empty dividend divides nothing: no error, as PyTorch looks at no divisor.
            like_torch(fn, a[:0], b[1:2])


# The two-tensor spellings (a Python int divisor promotes bool to int64).
BOOL_DIVISIONS = [n for n in DIVISIONS if not n.startswith("number") and n != "0-d-divisor"]


@pytest.mark.parametrize("name", BOOL_DIVISIONS)
def test_bool_division_is_not_implemented_like_torch(backend, name):
    fn, op = DIVISIONS[name]
    a, b = np.array([True, False]), np.array([True, True])
    raises_like_torch(fn, a, b, match=[f'"{op}" not implemented for bool tensors'])


@pytest.mark.parametrize(
    "name", ["number-divisor", "number-divisor-remainder", "number-dividend-%"]
)
def test_bool_tensors_with_a_zero_int_raise_like_torch(backend, name):
    # A Python int makes the division an int64 one; a Python bool keeps it bool.
    fn, op = DIVISIONS[name]
    a, b = np.array([True, False]), np.array([True, False])
    raises_like_torch(fn, a, b, match=[rf"{op}\(\): ZeroDivisionError"])
    raises_like_torch(lambda m, a, b: m.remainder(a, False), a, b, match=["bool tensors"])
