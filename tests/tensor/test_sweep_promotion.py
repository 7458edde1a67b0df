"""Regression cases of the elementwise sweep (test_sweep_elementwise.py) about which dtype an
op computes in and how it reads its operands: 0-d tensors beside half-precision ones, Python
ints in [2**63, 2**64) (uint64 to PyTorch), logical ops through the promoted dtype, and the
bounds and weights of clamp, lerp, addcmul and addcdiv, and the dtype and shape of an out=
tensor. Each case failed before its fix; each
compares with torch (values, dtype, and the exception class where torch raises)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from tensor_reference import require
from test_sweep_elementwise import mismatch

HALF = ("float16", "bfloat16")
nan, inf = float("nan"), float("inf")


def _half(m: Any, dtype: str, values: list) -> Any:
    return m.tensor(values).to(getattr(m, dtype))


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize(
    "call",
    [
        lambda m, x, s: x * s,
        lambda m, x, s: x / s,
        lambda m, x, s: x // s,
        lambda m, x, s: m.div(x, s, rounding_mode="trunc"),
        lambda m, x, s: x.mul_(s),
        lambda m, x, s: x + s,  # torch reads the 0-d tensor in the half dtype here
        lambda m, x, s: s * x,  # and here
    ],
    ids=["mul", "div", "floor_divide", "trunc", "mul_", "add", "reflected-mul"],
)
@pytest.mark.parametrize(
    "scalar",
    [
        lambda m: m.tensor(2**31 - 1, dtype=m.int32),
        lambda m: m.tensor(1e-8),
        lambda m: m.tensor(70000),
        lambda m: m.tensor(1e30, dtype=m.float64),
    ],
    ids=["int32-max", "tiny-float32", "int64", "huge-float64"],
)
def test_a_0d_tensor_beside_a_half_tensor_is_read_as_torch_reads_it(
    backend: str, dtype: str, call, scalar
) -> None:
    # float16 [0, 3] * tensor(2**31 - 1) was [nan, inf] (torch: [0, inf]); * tensor(1e-8)
    # was 0 (torch: 6e-8 in float16).
    require(dtype)
    assert mismatch(lambda m: call(m, _half(m, dtype, [0.0, 1.0, -0.0, 3.0]), scalar(m))) == ""


BIG = [2**63, 2**64 - 1, 2**64, -(2**63) - 1]


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int64", "float32", "complex64"])
@pytest.mark.parametrize("number", BIG)
@pytest.mark.parametrize(
    "call",
    [
        lambda t, n: t + n,
        lambda t, n: t * n,
        lambda t, n: n - t,
        lambda t, n: t == n,
        lambda t, n: t < n,
        lambda t, n: t // n,
        lambda t, n: t % n,
        lambda t, n: t & n if not t.dtype.is_floating_point and not t.dtype.is_complex else t,
    ],
    ids=["add", "mul", "rsub", "eq", "lt", "floordiv", "mod", "and"],
)
def test_ints_beyond_int64_are_uint64_as_in_torch(backend: str, dtype: str, number, call) -> None:
    # tensor([5]) * 2**63 raised OverflowError (torch: -2**63, a uint64 wrapped); beside a
    # bool tensor torch raises RuntimeError; 2**64 and beyond are OverflowError everywhere.
    assert mismatch(lambda m: call(m.tensor([5, 3], dtype=getattr(m, dtype)), number)) == ""


@pytest.mark.cunumeric
@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.logical_and(m.tensor([1, 2, 256]), m.tensor(256, dtype=m.int64)),
        lambda m: m.logical_and(m.tensor([1, 2], dtype=m.int8), m.tensor(256)),
        lambda m: m.logical_or(m.tensor([0.5, 0.0], dtype=m.float16), m.tensor(1e-10)),
        lambda m: m.logical_xor(m.tensor([1j, 0j, 1e-3j]), m.tensor(True)),
        lambda m: m.logical_not(m.tensor([1j, 0j])),
        lambda m: m.tensor([1j, 0j, 2 + 0j]).logical_and_(m.tensor([True, True, False])),
    ],
    ids=["0-d-int64", "int8-wraps", "half-underflow", "complex-xor", "complex-not", "in-place"],
)
def test_logical_ops_read_operands_in_the_promoted_dtype(backend: str, call) -> None:
    # int8 with a 0-d int64 256 saw True (torch casts 256 to int8: 0, False); a complex
    # number with only an imaginary part was False.
    assert mismatch(call) == ""


@pytest.mark.cunumeric
@pytest.mark.parametrize(
    "call",
    [
        # a 0-d int64 bound beside an n-d one: all in int64 (was wrapped into int8 first)
        lambda m: m.clamp(
            m.tensor([5, -127, -1, -128], dtype=m.int8),
            m.tensor(-(2**63)),
            m.tensor([2, 64, -(2**63), 31]),
        ),
        lambda m: m.clamp(m.tensor([1, 2]), m.tensor([0.5, 0.5]), 1.5),  # TypeError in torch
        lambda m: m.clamp(m.tensor([1, 2]), m.tensor(1.5), 1.75),  # a 0-d bound is a number
        lambda m: m.clamp(m.tensor([1, 2])),  # RuntimeError in torch (was ValueError)
        lambda m: m.lerp(
            m.tensor([1, 2], dtype=m.int16), m.tensor([3, 5], dtype=m.int16), m.tensor(0.5)
        ),
        lambda m: m.lerp(
            m.tensor([1.0, 2.0]), m.tensor([3.0, 5.0]), m.tensor([0.5, 0.25]).double()
        ),
        lambda m: m.lerp(m.tensor([1.0, 2.0]), m.tensor([3.0, 5.0]), m.tensor(0.3).double()),
        # int16 * 0-d int64 beside an int64 x: an int64 product (was a wrapped int16 one)
        lambda m: m.addcmul(
            m.tensor([3, 3]), m.tensor([300, 3], dtype=m.int16), m.tensor(300), value=300
        ),
        lambda m: m.addcmul(
            m.tensor([1, 2], dtype=m.uint8), m.tensor([-128, 5], dtype=m.int8), m.tensor(2)
        ),
        lambda m: m.addcdiv(
            m.tensor([1.0, 2.0]).half(), m.tensor([2**62, 3]), m.tensor(0.5).half(), value=0.5
        ),
    ],
)
def test_bounds_and_weights_promote_as_in_torch(backend: str, call) -> None:
    assert mismatch(call) == ""


@pytest.mark.cunumeric
@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.tensor([1 + 1j], dtype=m.complex64) * 1e39,  # raised: 1e39 beside complex64
        lambda m: m.tensor([1.0, 2.0]).float_power(m.tensor([1j])),  # complex128, was float64
        lambda m: m.float_power(m.tensor([2], dtype=m.int16), m.tensor([0.1]).half()),
        lambda m: m.tensor([2.0, 3.0], dtype=m.float64).float_power_(1j),  # RuntimeError
        lambda m: m.tensor([2.0 + 1j]).to(m.complex128).float_power_(2),  # allowed
    ],
)
def test_complex_and_float_power_dtypes_as_in_torch(backend: str, call) -> None:
    assert mismatch(call) == ""


def _into(m: Any, call: Any, dtype: str, shape: tuple) -> Any:
    out = m.zeros(shape, dtype=getattr(m, dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the resize's deprecation warning
        return call(m, out), out


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32", "float64", "complex64"])
@pytest.mark.parametrize("shape", [(0,), (3,), (2, 2)])
@pytest.mark.parametrize(
    "call",
    [
        lambda m, o: m.add(m.tensor([1, 2]), 1.5, out=o),  # float into an int out: error
        lambda m, o: m.mul(m.tensor([1, 2]), m.tensor([[3], [4]]), out=o),
        lambda m, o: m.eq(m.tensor([1, 2]), 1, out=o),  # bool into any out
        lambda m, o: m.sqrt(m.tensor([0.0, 4.0]), out=o),
        lambda m, o: m.floor(m.tensor([0.5, 1.5]), out=o),  # exactly float32's dtype
        lambda m, o: m.neg(m.tensor([1, -2]), out=o),  # exactly int64
        lambda m, o: m.clamp(m.tensor([1.0, 5.0]), 2, 3, out=o),  # exactly float32
        lambda m, o: m.pow(m.tensor([2, 3]), 2, out=o),
        lambda m, o: m.float_power(m.tensor([2, 3]), 2, out=o),  # exactly float64
        lambda m, o: m.logical_xor(m.tensor([1, 0]), m.tensor([1, 1]), out=o),
        lambda m, o: m.gcd(m.tensor([4, 6]), m.tensor([6, 4]), out=o),
    ],
)
def test_out_takes_the_dtypes_and_shapes_torch_takes(backend: str, dtype: str, shape, call) -> None:
    # out= raised TypeError (no such keyword) in every elementwise function
    assert mismatch(lambda m: _into(m, call, dtype, shape)) == ""


def test_out_refuses_inputs_that_require_grad() -> None:
    def call(m: Any) -> Any:
        return m.mul(m.ones(2, requires_grad=True), 2, out=m.zeros(2))

    assert mismatch(call) == ""
