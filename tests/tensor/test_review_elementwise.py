"""Review of the scalar/promotion edge cases against PyTorch: half-precision results that
PyTorch computes in float32 (addcmul/addcdiv, lerp, floor division, norm, std), lerp with
weight 1, and Python ints beyond int64 that PyTorch takes for floating-point tensors."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _pair(lib: Any, dtype: str, *values: list) -> list:
    return [lib.tensor(v, dtype=getattr(lib, dtype)) for v in values]


def _same(fn: Callable[..., Any], dtype: str, *values: list) -> None:
    expected = fn(*_pair(torch, dtype, *values))
    got = fn(*_pair(tw, dtype, *values))
    assert str(got.dtype) == str(expected.dtype).replace("torch", "tensorweaver")
    np.testing.assert_array_equal(np.asarray(got.tolist()), np.asarray(expected.tolist()))


# Adam's exp_avg_sq.addcmul_(grad, grad, value=1 - beta2) with float16 gradients over 256:
# PyTorch forms value * t1 * t2 in float32 and rounds once; grad * grad in float16 is inf.
@pytest.mark.parametrize(
    "fn",
    [
        lambda x, g: x.addcmul(g, g, value=0.001),
        lambda x, g: x.addcmul_(g, g, value=0.001),
        lambda x, g: x.addcdiv(g, g * 0 + 0.5, value=0.01),
        lambda x, g: x.addcmul(g, g, value=-1e-8),
    ],
)
def test_half_addcmul_addcdiv_do_not_overflow_in_between(fn: Callable[..., Any]) -> None:
    _same(fn, "float16", [1.0, 0.0], [300.0, 60000.0])


# PyTorch reads a Python int up to 2**64 - 1 for a floating-point tensor (as uint64).
@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x * 2**63,
        lambda x: x + (2**64 - 1),
        lambda x: x.clamp(max=2**63),
        lambda x: x.masked_fill(x > 0, 2**64 - 1),
        lambda x: (2**63 + 5) - x,
    ],
)
def test_floats_with_ints_beyond_int64(fn: Callable[..., Any]) -> None:
    _same(fn, "float32", [1.5, -2.25])


@pytest.mark.parametrize("fn", [lambda x: x * 2**64, lambda x: x.clamp(max=2**64)])
def test_ints_beyond_uint64_raise(fn: Callable[..., Any]) -> None:
    with pytest.raises(OverflowError):
        fn(torch.tensor([1.5, -2.25]))
    with pytest.raises(OverflowError):
        fn(tw.tensor([1.5, -2.25]))


def test_int_tensor_with_an_int_in_uint64_range_wraps_like_torch() -> None:
    # PyTorch reads 2**63 as a uint64 and wraps it into int64: [-2**63, 0] (this raised)
    assert (tw.tensor([1, 2]) * 2**63).tolist() == [-(2**63), 0]
    with pytest.raises(OverflowError):
        tw.tensor([1, 2]) * 2**64


# A number too large for the tensor's compute type (float32 for the half types): PyTorch
# raises in where/addcmul/addcdiv/lerp (they gave inf or NaN here), but converts unchecked
# in nan_to_num and in plain arithmetic, and a half tensor's 1e6 rounds to inf.
_BIG_NUMBER_OPS = {
    "where": lambda lib, x, big: lib.where(x > 1, x, big),
    "where_first": lambda lib, x, big: lib.where(x > 1, big, x),
    "addcmul": lambda lib, x, big: x.addcmul(x, x, value=big),
    "addcdiv": lambda lib, x, big: x.addcdiv(x, x, value=big),
    "lerp": lambda lib, x, big: x.lerp(x * 2, big),
    "nan_to_num": lambda lib, x, big: (x / 0).nan_to_num(posinf=big, neginf=-big),
    "mul": lambda lib, x, big: x * big,
}


@pytest.mark.parametrize("op", sorted(_BIG_NUMBER_OPS))
@pytest.mark.parametrize(
    "dtype, big, device",
    [
        ("float32", 1e39, "numpy"),
        ("float32", 1e39, "torch:cpu"),
        ("float16", 1e6, "numpy"),
        ("bfloat16", 1e39, "torch:cpu"),
    ],
)
def test_numbers_beyond_the_compute_type(op: str, dtype: str, big: float, device: str) -> None:
    fn = _BIG_NUMBER_OPS[op]
    x_torch = torch.tensor([1.0, 2.0, -3.0], dtype=getattr(torch, dtype))
    x_tw = tw.tensor([1.0, 2.0, -3.0], dtype=getattr(tw, dtype), device=device)
    try:
        expected = fn(torch, x_torch, big)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="overflow"):
            fn(tw, x_tw, big)
        return
    got = fn(tw, x_tw, big)
    np.testing.assert_array_equal(
        np.asarray(got.float().tolist()), np.asarray(expected.float().tolist())
    )


# lerp as PyTorch computes it: end - (end - start) * (1 - weight) for weight >= 0.5, so that
# weight 1 gives end exactly; start + weight * (end - start) gave 0.0 for lerp(1e8, 1, 1).
@pytest.mark.parametrize(
    "fn",
    [
        lambda s, e: s.lerp(e, 1.0),
        lambda s, e: s.lerp(e, e * 0 + 1.0),
        lambda s, e: s.clone().lerp_(e, 1.0),
    ],
)
def test_lerp_weight_near_one(fn: Callable[..., Any]) -> None:
    _same(fn, "float32", [1e8, 3.0, -7.5], [1.0, 1e-8, 1e7])


def test_half_lerp_weight_near_one() -> None:
    _same(lambda s, e: s.lerp(e, 0.999), "float16", [-13032.0, 1.0], [-0.000497, 2.0])


# floor division of a half tensor by a number it cannot hold: PyTorch divides by the number
# in float32 (5812 // 3.7 is 1570); dividing by float16(3.7) = 3.6992 gave 1571.
@pytest.mark.parametrize("number", [3.7, 1e-7])
def test_half_floor_divide_by_inexact_number(number: float) -> None:
    _same(lambda x: x // number, "float16", [5812.0, 0.003456])


# Half-precision reductions of squares accumulate in float32, as PyTorch's (var already
# does): the norm and std of float16 values in the thousands are finite, not inf.
@pytest.mark.parametrize("fn", [lambda x: x.norm(), lambda x: x.std()])
def test_half_norm_std_do_not_overflow(fn: Callable[..., Any]) -> None:
    values = (np.random.default_rng(0).standard_normal((3, 50)) * 3000).tolist()
    expected = fn(torch.tensor(values, dtype=torch.float16))
    got = fn(tw.tensor(values, dtype=tw.float16))
    assert got.dtype == tw.float16
    np.testing.assert_allclose(got.item(), expected.item(), rtol=2e-3)
