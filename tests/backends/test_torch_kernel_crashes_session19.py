"""Inputs on which torch 2.13's own kernels never return or kill the process, through the
torch:cpu backend: each call ends, with torch's value where torch gives one at once and a clear
error where torch's kernel would run without end.

torch's Legendre, Laguerre and shifted Chebyshev kernels loop n times per element at some x
(legendre_polynomial_p(0.5, 2**40) runs for hours); int64 and int32 ``div(..., "trunc")`` of
the type's minimum by -1 is a SIGFPE in torch.
"""

from __future__ import annotations

import time

import pytest
import torch

tw = pytest.importorskip("tensorweaver")

#: (function name, an x where torch's kernel loops, an x where it answers at once)
LOOPING = [
    ("legendre_polynomial_p", 0.5, 1.0),
    ("legendre_polynomial_p", -1e-300, -1.0),
    ("laguerre_polynomial_l", 0.999999, 0.0),
    ("laguerre_polynomial_l", 1e-300, 0.0),
    ("shifted_chebyshev_polynomial_t", 1e-300, 0.0),
    ("shifted_chebyshev_polynomial_u", -1e-300, 0.0),
    ("shifted_chebyshev_polynomial_v", 1e-300, 1.0),
    ("shifted_chebyshev_polynomial_w", -1e-300, 0.5),
]


@pytest.fixture(autouse=True)
def on_torch_cpu():
    with tw.device("torch:cpu"):
        yield


def _both(name: str, x: float, n: float):
    ours = getattr(tw.special, name)(tw.tensor([x], dtype=tw.float64), tw.tensor([n]).double())
    theirs = getattr(torch.special, name)(
        torch.tensor([x], dtype=torch.float64), torch.tensor([n], dtype=torch.float64)
    )
    return ours, theirs


@pytest.mark.parametrize(("name", "slow_x", "fast_x"), LOOPING)
def test_polynomial_of_a_huge_degree_is_refused_where_torch_loops(name, slow_x, fast_x) -> None:
    start = time.perf_counter()
    with pytest.raises(ValueError, match=f"{name}: degree n=1099511627776 .* lower degree"):
        getattr(tw.special, name)(
            tw.tensor([fast_x, slow_x], dtype=tw.float64),
            tw.tensor([3.0, 2.0**40], dtype=tw.float64),
        )
    assert time.perf_counter() - start < 5  # torch's kernel: hours


@pytest.mark.parametrize(("name", "slow_x", "fast_x"), LOOPING)
def test_polynomial_keeps_torchs_values_where_torch_answers(name, slow_x, fast_x) -> None:
    # a huge degree where torch's kernel answers at once, a degree torch computes in a few
    # ms, and the degrees torch reads as INT64_MIN (0 at once)
    for x, n in [(fast_x, 2.0**40), (slow_x, 10_000.0), (slow_x, 2.0**63), (slow_x, float("inf"))]:
        ours, theirs = _both(name, x, n)
        torch.testing.assert_close(torch.from_numpy(ours.numpy()), theirs, equal_nan=True)


def test_polynomial_with_an_integer_degree_is_refused_too() -> None:
    with pytest.raises(ValueError, match="legendre_polynomial_p: degree"):
        tw.special.legendre_polynomial_p(tw.tensor([0.25], dtype=tw.float64), 2**40)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_trunc_division_of_the_minimum_by_minus_one_wraps(dtype) -> None:
    # torch.div(min, -1, rounding_mode="trunc") is a SIGFPE; torch's floor division of the
    # same integers wraps to the minimum, which trunc and floor agree on here
    low = torch.iinfo(getattr(torch, dtype)).min
    expected = torch.floor_divide(
        torch.tensor([low, 7], dtype=getattr(torch, dtype)),
        torch.tensor([-1, -2], dtype=getattr(torch, dtype)),
    )
    a = tw.tensor([low, 7], dtype=getattr(tw, dtype))
    b = tw.tensor([-1, -2], dtype=getattr(tw, dtype))
    got = tw.div(a, b, rounding_mode="trunc")
    assert got.numpy().tolist() == [expected[0].item(), -3]
    assert tw.div(a, -1, rounding_mode="trunc").numpy().tolist()[0] == low
